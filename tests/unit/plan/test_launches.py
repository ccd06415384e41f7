"""Which launches each distributed test makes (plan.launches), without launching anything."""

from __future__ import annotations

import ast

import pytest

from cases import get_case
from plan import launches
from tests import paths

ROOT = paths.ROOT
DEVICES = ("cpu", "cuda")


@pytest.fixture
def world_sizes(monkeypatch):
    monkeypatch.setenv("SUITE_WORLD_SIZES", "1,2,3,4")


def _suite_tests() -> set[str]:
    tree = ast.parse((ROOT / "suite" / "test_distributed.py").read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_distributed_test_has_points_carrying_its_name(world_sizes):
    # a plan entry without a test is never run; a test without one fails to collect
    assert set(launches.LAUNCHES) == _suite_tests()
    for test in launches.LAUNCHES:
        points = launches.points(test, DEVICES)
        assert points, test
        assert {p.test for p in points} == {test}
        assert len({p.id for p in points}) == len(points), f"{test}: two points share a node ID"


def test_cpu_world_sizes_above_two_are_slow_and_the_smallest_is_kept(world_sizes):
    ddp = launches.points("test_ddp", DEVICES)
    assert [(p.device, p.world, p.slow) for p in ddp] == [
        ("cpu", 1, False),
        ("cpu", 2, False),
        ("cpu", 3, True),
        ("cpu", 4, True),
        ("cuda", 1, False),
        ("cuda", 2, False),
        ("cuda", 3, False),
        ("cuda", 4, False),
    ]
    allreduce = launches.points("test_allreduce", ("cpu",))
    assert [p.world for p in allreduce] == [2, 3, 4], "one rank has nothing to all-reduce"
    assert [p.id for p in allreduce][0] == "parallel.allreduce-w2-cpu"


def test_cuda_launches_need_a_gpu_per_rank_and_nccl(world_sizes):
    on_cuda = [p for p in launches.points("test_average_gradient", DEVICES) if p.device == "cuda"]
    assert [p.requires for p in on_cuda] == [("distributed", f"gpus>={w}", "nccl") for w in (2, 3, 4)]
    assert all(p.requires == ("distributed",) for p in launches.points("test_setup_torchrun", DEVICES))


@pytest.mark.parametrize("devices", [("cpu",), ("cuda",), DEVICES])
def test_dataparallel_is_one_cuda_process_on_two_gpus_whatever_the_devices(devices):
    (point,) = launches.points("test_dataparallel", devices)
    assert (point.device, point.world, point.id) == ("cuda", None, "parallel.dp_vs_ddp-dp-cuda")
    assert point.requires == ("distributed", "gpus>=2", "nccl")


def test_a_cpu_only_run_launches_nothing_on_cuda(world_sizes):
    for test in launches.LAUNCHES:
        if test != "test_dataparallel":
            assert {p.device for p in launches.points(test, ("cpu",))} == {"cpu"}, test


def test_launched_names_are_the_names_the_points_record():
    """A point records its finding under the LaunchRecord's name, or (failed, skipped, no finding)
    under its own `PointKey.name`: each default name in `Case.launched` is one a point has."""
    from plan import launches

    recorded = {p.key.name for test in launches.LAUNCHES for p in launches.points(test, ["cpu", "cuda"])}
    for case_id in ("dist.setup", "parallel.dp_vs_ddp", "parallel.allreduce"):
        defaults = [n for n in get_case(case_id).launched if n.startswith("test_")]
        assert defaults and any(n in recorded for n in defaults), (case_id, sorted(recorded))
    for name in (
        "test_setup_spawn-mp_spawn_tcp-w2-cpu",
        "test_dataparallel-dp-cuda",
        "test_two_nodes-two_nodes-cpu",
    ):
        assert name in recorded


def test_launched_keys_are_points_plan_launches_produces(monkeypatch):
    """Every key of every case's `launched` that names a point (``<test>-…``, the name a point
    records where its launch failed or was skipped) is one plan.launches produces for this case,
    on the CPU at the default world sizes (SUITE_WORLD_SIZES unset) and on CUDA at every GPU count
    up to 8; every other key is the finding's own name, and each claim a launch decides has a point
    name beside it. A renamed launch then goes red here instead of leaving its claim undecided."""
    from cases import all_cases
    from harness.machine import premises
    from plan import launches

    monkeypatch.delenv("SUITE_WORLD_SIZES", raising=False)
    produced: dict[str, set[str]] = {}
    for gpus in range(0, 9):
        monkeypatch.setattr(premises, "gpu_count", lambda gpus=gpus: gpus)
        for test in launches.LAUNCHES:
            for point in launches.points(test, ["cpu", "cuda"]):
                produced.setdefault(point.case, set()).add(point.key.name)
    cpu_default = {
        p.key.name for test in launches.LAUNCHES for p in launches.points(test, ["cpu"]) if p.device == "cpu"
    }
    tests = tuple(f"{t}-" for t in launches.LAUNCHES)
    seen = 0
    for case in all_cases():
        point_keys = [k for k in case.launched if k.startswith(tests)]
        for key in point_keys:
            assert key in produced.get(case.id, set()), (case.id, key, sorted(produced.get(case.id, ())))
            if key.endswith("-cpu"):
                assert key in cpu_default, (case.id, key, "not a point at the default CPU world sizes")
            seen += 1
        for claim in set(case.launched.values()):
            assert any(case.launched[k] == claim for k in point_keys), (case.id, claim, "no point name")
    assert seen >= 6
