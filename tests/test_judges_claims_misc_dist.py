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


def test_more_gpus_more_throughput():
    k_t1 = [0.2 + 1e-3 * i for i in range(10)]
    tk = [0.11 + 1e-3 * i for i in range(10)]
    assert manual_dp.judge_more_gpus_more_throughput(k_t1, tk, 2, 0.05).verdict is Verdict.HOLDS
    assert manual_dp.judge_more_gpus_more_throughput(tk, k_t1, 2, 0.05).verdict is Verdict.FAILS
    assert manual_dp.judge_more_gpus_more_throughput(tk, tk, 2, 0.05).verdict is Verdict.DEPENDS
