"""Claims as the unit (issue 36) for misc.memory_stats, misc.sampling_ops, misc.tensorboard,
dist.setup, dist.sampler and parallel.*: each judge these cases added or touched, fed the normal
observation (holds) and a contrary one (fails or depends); every claim decided; the launched
points' names in `Case.launched` are the names those points record."""

from __future__ import annotations

import ast
import inspect
import os

import pytest

from cases import dist, get_case
from cases.misc import memory_stats, sampling_ops, tensorboard
from cases.parallel import allreduce, dp_vs_ddp, manual_dp
from cases.spec import ErratumKind, Verdict

IDS = (
    "misc.memory_stats",
    "misc.sampling_ops",
    "misc.tensorboard",
    "dist.setup",
    "dist.sampler",
    "parallel.allreduce",
    "parallel.average_gradient",
    "parallel.dp_vs_ddp",
    "parallel.manual_dp",
)
MIB = 2**20


@pytest.mark.parametrize("case_id", IDS)
def test_every_claim_is_decided(case_id):
    case = get_case(case_id)
    assert case.claims and case.undecided_claims() == []


@pytest.mark.parametrize("case_id", IDS)
def test_every_check_calls_a_judge(case_id):
    for name, check in get_case(case_id).checks.items():
        tree = ast.parse(inspect.getsource(check.fn).lstrip())
        called = {
            n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert any(c.startswith("judge_") for c in called), f"{case_id} check {name} calls no judge"


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


# ---- misc.memory_stats ------------------------------------------------------------------------------


def test_max_memory_allocated_judged_on_the_peak():
    assert memory_stats.judge_max_memory_allocated(128 * MIB, 128 * MIB, 64 * MIB).verdict is Verdict.HOLDS
    assert memory_stats.judge_max_memory_allocated(128 * MIB, 64 * MIB, 64 * MIB).verdict is Verdict.FAILS
    assert memory_stats.judge_max_memory_allocated(64 * MIB, 64 * MIB, 64 * MIB).verdict is Verdict.FAILS


def test_reset_to_the_current_allocation_holds_with_the_notes_zero_an_erratum():
    f = memory_stats.judge_reset_max_memory_allocated(128 * MIB, 64 * MIB, 64 * MIB)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert memory_stats.judge_reset_max_memory_allocated(128 * MIB, 0, 0).errata == ()
    assert (
        memory_stats.judge_reset_max_memory_allocated(128 * MIB, 128 * MIB, 64 * MIB).verdict is Verdict.FAILS
    )


def test_reset_deprecation_is_an_erratum_never_a_verdict():
    f = memory_stats.judge_reset_deprecated(
        "reset_max_memory_allocated now calls reset_peak_memory_stats", "2.13"
    )
    assert f.verdict is None and f.errata[0].kind is ErratumKind.DEPRECATED_API
    assert memory_stats.judge_reset_deprecated("", "1.4").errata == ()


def test_reset_deprecation_seen_on_the_cpu():
    import torch

    f = memory_stats.check_reset_deprecated(torch.device("cpu"))
    assert [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API]


def test_version_cuda_judged_against_the_compiled_version():
    assert memory_stats.judge_version_cuda("12.4", 12040, "H100").verdict is Verdict.HOLDS
    assert memory_stats.judge_version_cuda("12.4", None, "H100").verdict is Verdict.HOLDS
    assert memory_stats.judge_version_cuda("11.8", 12040, "H100").verdict is Verdict.FAILS
    assert memory_stats.judge_version_cuda(None, 12040, "H100").verdict is Verdict.FAILS


# ---- misc.sampling_ops --------------------------------------------------------------------------------


def test_multinomial_shapes():
    assert sampling_ops.judge_multinomial_shapes((3,), (5, 3), 3, 5).verdict is Verdict.HOLDS
    assert sampling_ops.judge_multinomial_shapes((3,), (15,), 3, 5).verdict is Verdict.FAILS


def test_multinomial_weights():
    raised = {"raised": "RuntimeError", "message": "probability tensor contains either `inf`"}
    ok = {"negative": raised, "all-zero": raised, "infinite": raised}
    assert sampling_ops.judge_multinomial_weights(ok, 0.8, 1000, "cpu").verdict is Verdict.HOLDS
    accepted = {**ok, "infinite": {"raised": None, "message": ""}}
    assert sampling_ops.judge_multinomial_weights(accepted, 0.8, 1000, "cpu").verdict is Verdict.FAILS
    assert sampling_ops.judge_multinomial_weights(ok, 9.0, 1000, "cpu").verdict is Verdict.FAILS


def test_zero_weights_last():
    assert sampling_ops.judge_zero_weights_last("", 200, 200, "cpu").verdict is Verdict.HOLDS
    assert sampling_ops.judge_zero_weights_last("", 199, 200, "cpu").verdict is Verdict.FAILS
    assert sampling_ops.judge_zero_weights_last("invalid", 0, 0, "cpu").verdict is Verdict.FAILS


def test_repeat_interleave_and_repeat():
    seen = {"flattens": True, "dim=0": True}
    assert sampling_ops.judge_repeat_interleave(seen).verdict is Verdict.HOLDS
    assert sampling_ops.judge_repeat_interleave({**seen, "dim=0": False}).verdict is Verdict.FAILS
    f = sampling_ops.judge_repeat(True, False, [1, 1, 2, 2])
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert sampling_ops.judge_repeat(True, True, [1, 2, 1, 2]).errata == ()
    assert sampling_ops.judge_repeat(False, False, [1, 1, 2, 2]).verdict is Verdict.FAILS


def test_multinomial_bound_n_of_n_is_an_erratum_not_the_claim():
    f = sampling_ops.judge_multinomial_bound(n_of_n_runs=True, permutation=True, over_raises=True)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert "必须小于" in f.errata[0].quote
    (claim,) = [c for c in get_case("misc.sampling_ops").claims if c.id == "multinomial_bound"]
    assert "必须小于" not in claim.quote
    assert sampling_ops.judge_multinomial_bound(True, True, over_raises=False).verdict is Verdict.FAILS


def test_repeat_erratum_is_observed():
    import torch

    assert sampling_ops.check_repeat(torch.device("cpu")).errata


def test_nan_judges():
    assert sampling_ops.judge_nan({"nan != nan": True, "isnan": True}).verdict is Verdict.HOLDS
    assert sampling_ops.judge_nan({"nan != nan": False, "isnan": True}).verdict is Verdict.FAILS
    sums = {"numpy sum": float("nan"), "numpy nansum": 42.0, "torch sum": float("nan"), "torch nansum": 42.0}
    twins = {"nanmax": False}
    assert sampling_ops.judge_nan_reductions(sums, True, twins).verdict is Verdict.HOLDS
    assert (
        sampling_ops.judge_nan_reductions({**sums, "torch nansum": float("nan")}, True, twins).verdict
        is Verdict.FAILS
    )
    assert (
        sampling_ops.judge_nan_reductions({**sums, "numpy sum": 42.0}, True, twins).verdict is Verdict.FAILS
    )


def test_notes_spellings_are_typos():
    f = sampling_ops.judge_notes_spellings({"x.asstype(np.float32)": "AttributeError: asstype", "ok": ""})
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert sampling_ops.judge_notes_spellings({"ok": ""}).errata == ()


# ---- misc.tensorboard -----------------------------------------------------------------------------------


def test_two_writers_one_chart():
    written = {"Loss/train": [(0, 0.5), (0, 0.25)]}
    runs = ["exp1", "exp2"]
    assert tensorboard.judge_two_writers_one_chart(written, written, 2, runs).verdict is Verdict.HOLDS
    half = {"Loss/train": [(0, 0.5)]}
    assert tensorboard.judge_two_writers_one_chart(half, written, 2, runs).verdict is Verdict.FAILS
    assert tensorboard.judge_two_writers_one_chart(written, written, 2, ["exp1"]).verdict is Verdict.FAILS


def test_default_log_dir():
    here = os.path.join("runs", "Nov26_13-39-20_host")
    assert tensorboard.judge_default_log_dir(here, True, "host").verdict is Verdict.HOLDS
    assert tensorboard.judge_default_log_dir(here, True, "other").verdict is Verdict.FAILS
    assert (
        tensorboard.judge_default_log_dir(os.path.join("logs", "x_host"), True, "host").verdict
        is Verdict.FAILS
    )


# ---- dist.setup -------------------------------------------------------------------------------------------


def test_notes_lines_are_typos():
    f = dist.judge_notes_lines(
        {"使用 destory_process_group() 销毁进程组": "AttributeError: no destory_process_group"}
    )
    assert f.verdict is None and f.errata[0].kind is ErratumKind.TYPO and "destroy" in f.errata[0].evidence
    assert dist.judge_notes_lines({"x": ""}).errata == ()


def test_partition_depends_on_p_dividing_n_and_the_unconditional_wording_is_an_erratum():
    even = [(12, 4, False, 0, 0, True)]
    held = dist.judge_partition(even)
    assert held.verdict is Verdict.HOLDS and held.errata == ()
    uneven = dist.judge_partition([*even, (10, 4, False, 2, 0, True)])
    assert uneven.verdict is Verdict.DEPENDS
    assert [e.kind for e in uneven.errata] == [ErratumKind.WRONG_STATEMENT]
    assert "互不相交的子集" in uneven.errata[0].quote and "n=10, p=4" in uneven.errata[0].evidence
    assert dist.judge_partition([(10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS


def test_process_group_steps_quotes_one_note():
    (claim,) = [c for c in get_case("dist.setup").claims if c.id == "process_group_steps"]
    assert claim.file == "000" and "torchrun" not in claim.quote


# ---- parallel.* ----------------------------------------------------------------------------------


def test_ddp_faster_than_dp():
    dp, ddp = [0.1 + 1e-3 * i for i in range(20)], [0.05 + 1e-3 * i for i in range(20)]
    assert dp_vs_ddp.judge_ddp_faster_than_dp(dp, ddp, 2, 0.05).verdict is Verdict.HOLDS
    assert dp_vs_ddp.judge_ddp_faster_than_dp(ddp, dp, 2, 0.05).verdict is Verdict.FAILS
    assert dp_vs_ddp.judge_ddp_faster_than_dp(dp, dp, 2, 0.05).verdict is Verdict.DEPENDS
    assert dp_vs_ddp.judge_ddp_faster_than_dp([0.1] * 5, [0.05] * 5, 2, 0.05).verdict is Verdict.HOLDS


def test_allreduce_judges():
    assert allreduce.judge_d2l_allreduce(1e-7, True, True, ["cpu"]).verdict is Verdict.HOLDS
    assert allreduce.judge_d2l_allreduce(1e-2, False, True, ["cpu"]).verdict is Verdict.FAILS
    assert allreduce.judge_d2l_allreduce(1e-7, True, False, ["cpu"]).verdict is Verdict.FAILS
    assert allreduce.judge_allreduce_traffic([], 2, "fit").verdict is Verdict.HOLDS
    assert (
        allreduce.judge_allreduce_traffic(["ring at 4096 B: bytes sent"], 2, "fit").verdict is Verdict.FAILS
    )


def test_allreduce_problems_seen_in_a_table():
    from tests.test_distributed_judges import S_BYTES, _allreduce_rows

    table, p = allreduce.allreduce_table(_allreduce_rows(4))
    assert allreduce.allreduce_problems(table, p) == []
    table, p = allreduce.allreduce_table(_allreduce_rows(4, ring_sent=[3 * S_BYTES] * 4))
    assert (
        allreduce.judge_allreduce_traffic(allreduce.allreduce_problems(table, p), p, "").verdict
        is Verdict.FAILS
    )


MIB64 = 1 << 26


def test_ring_faster_than_master_holds_where_the_ring_is_faster():
    sweep = [(1024, [1e-4] * 5, [2e-4] * 5), (MIB64, [0.2, 0.21, 0.22], [0.1, 0.1, 0.11])]
    f = allreduce.judge_ring_faster_than_master(sweep, 2, 0.05)
    assert f.verdict is Verdict.HOLDS and "faster from 67,108,864 B on" in f.evidence


def test_ring_slower_than_master_depends_at_two_ranks_and_fails_beyond():
    sweep = [(1024, [1e-4] * 5, [2e-4] * 5), (MIB64, [0.1, 0.1, 0.1], [0.2, 0.2, 0.2])]
    two = allreduce.judge_ring_faster_than_master(sweep, 2, 0.05)
    assert two.verdict is Verdict.DEPENDS and "p=2" in two.evidence
    assert allreduce.judge_ring_faster_than_master(sweep, 4, 0.05).verdict is Verdict.FAILS
    same = [(MIB64, [0.1 + 1e-3 * i for i in range(20)], [0.1 + 1e-3 * i for i in range(20)])]
    assert allreduce.judge_ring_faster_than_master(same, 4, 0.05).verdict is Verdict.DEPENDS
    assert allreduce.judge_ring_faster_than_master([], 2, 0.05).verdict is Verdict.DEPENDS


def test_ring_vs_master_reads_the_sweep_table():
    from tests.test_distributed_judges import S_BYTES, _allreduce_rows

    table, p = allreduce.allreduce_table(_allreduce_rows(2))
    assert allreduce.ring_vs_master(table) == [(S_BYTES, [1e-3, 2e-3], [1e-3, 2e-3])]
    f = allreduce.judge_ring_faster_than_master(allreduce.ring_vs_master(table), p, 0.05)
    assert f.verdict is Verdict.DEPENDS  # equal times: no gain, at two ranks


def test_the_ring_speed_claim_is_decided_by_the_timed_sweep():
    (claim,) = [c for c in get_case("parallel.allreduce").decided_claims() if c.id == "ring_faster"]
    assert claim.kind.value == "speed"
    assert "ring_vs_master-w2" in claim.checks and "test_allreduce_sizes-ring-w2-cpu" in claim.checks


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


def test_more_gpus_more_throughput():
    k_t1 = [0.2 + 1e-3 * i for i in range(10)]
    tk = [0.11 + 1e-3 * i for i in range(10)]
    assert manual_dp.judge_more_gpus_more_throughput(k_t1, tk, 2, 0.05).verdict is Verdict.HOLDS
    assert manual_dp.judge_more_gpus_more_throughput(tk, k_t1, 2, 0.05).verdict is Verdict.FAILS
    assert manual_dp.judge_more_gpus_more_throughput(tk, tk, 2, 0.05).verdict is Verdict.DEPENDS
