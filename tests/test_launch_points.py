"""Which launches each distributed test makes (plan.launches), without launching anything."""

import ast
from pathlib import Path

import pytest

from plan import launches

ROOT = Path(__file__).resolve().parents[1]
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
