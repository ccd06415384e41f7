"""The judges of the distributed cases (`cases.parallel`, `cases.dist`) on hand-made rank
files: each check goes red on the evidence it exists to catch, without launching a process."""

import copy

import pytest
import torch

from cases import dist as S
from cases._lib import data_parallel as DP
from cases._lib import launched_training as LT
from cases._lib.collectives import ALLREDUCE
from cases.parallel import allreduce

S_BYTES = 1 << 12


def _allreduce_rows(p: int, ring_sent=None, naive_sent=None, checked=True) -> list[dict]:
    """The ranks' JSON of an all-reduce sweep at one size, with the traffic each algorithm sends."""
    sent = {
        "naive": naive_sent or [(p - 1) * S_BYTES] + [S_BYTES] * (p - 1),
        "master": [(p - 1) * S_BYTES] + [S_BYTES] * (p - 1),
        "ring": ring_sent or [2 * (p - 1) * S_BYTES // p] * p,
        "all_reduce": [2 * (p - 1) * S_BYTES // p] * p,
    }
    return [
        {
            "world_size": p,
            "rows": [
                {
                    "algorithm": a,
                    "bytes": S_BYTES,
                    "times_s": [1e-3, 2e-3],
                    "bytes_sent": sent[a][rank],
                    "max_abs_err": 0.0,
                    "within_bound": checked,
                }
                for a in ALLREDUCE
            ],
        }
        for rank in range(p)
    ]


@pytest.mark.parametrize("p", [2, 4])
def test_the_algorithms_traffic_passes(p):
    table, world = allreduce.allreduce_table(_allreduce_rows(p))
    assert world == p
    allreduce.check_allreduce(table, p)


def test_a_ring_sending_the_naive_traffic_fails():
    table, p = allreduce.allreduce_table(_allreduce_rows(4, ring_sent=[3 * S_BYTES] * 4))
    with pytest.raises(AssertionError, match=r"ring at 4096 B over 4 ranks.*2\(p−1\)/p·S = 6144"):
        allreduce.check_allreduce(table, p)


def test_a_naive_root_sending_less_than_p_minus_1_messages_fails():
    table, p = allreduce.allreduce_table(_allreduce_rows(4, naive_sent=[2 * S_BYTES] + [S_BYTES] * 3))
    with pytest.raises(AssertionError, match=r"naive at 4096 B over 4 ranks.*\(p−1\)·S = 12288"):
        allreduce.check_allreduce(table, p)


def test_a_sum_outside_the_bound_and_a_sweep_with_no_truth_fail():
    table, p = allreduce.allreduce_table(_allreduce_rows(2, checked=False))
    with pytest.raises(AssertionError, match="sum outside the fp32 bound"):
        allreduce.check_allreduce(table, p)
    with pytest.raises(AssertionError, match="wrong sum"):
        allreduce.allreduce_sweep_row(table, p, "ring", "cpu")
    table, p = allreduce.allreduce_table(_allreduce_rows(2, checked=None))
    with pytest.raises(AssertionError, match="no size was checked"):
        allreduce.check_allreduce(table, p)


def test_the_slowest_rank_makes_each_step():
    ranks = _allreduce_rows(2)
    ranks[1]["rows"][0]["times_s"] = [5e-3, 1e-3]
    table, _ = allreduce.allreduce_table(ranks)
    assert table[0]["times_s"] == [5e-3, 2e-3]


def _train_rows(world: int) -> list[dict]:
    mode = {
        "step_s": [0.01, 0.02],
        "params_rel_err": 0.0,
        "params_within_tol": True,
        "grad_rel_err": 0.0,
        "grad_within_tol": True,
        "params_sha1": "same",
        "tol": {},
    }
    return [
        {
            "rank": r,
            "world_size": world,
            "batch": 64,
            "params": 10,
            "backend": "gloo",
            "modes": {"ddp": dict(mode)},
        }
        for r in range(world)
    ]


def test_training_checks_catch_a_missing_rank_and_diverged_replicas():
    LT.check_training(_train_rows(2), "ddp")
    with pytest.raises(AssertionError, match="1 rank files for world size 2"):
        LT.check_training(_train_rows(2)[:1], "ddp")
    rows = _train_rows(2)
    rows[1]["modes"]["ddp"]["params_sha1"] = "other"
    with pytest.raises(AssertionError, match="different parameters"):
        LT.check_training(rows, "ddp")


def test_a_training_row_goes_through_the_results_record():
    from harness.contract.record import BenchmarkInfo

    info, extra, times = LT.train_row(_train_rows(2), "ddp", "cpu")
    data = BenchmarkInfo(**info).to_data()
    assert (data["case"], data["role"], data["size_label"]) == (
        "parallel.dp_vs_ddp",
        "optimized",
        "w2-batch64",
    )
    assert times == extra["step_s"] == [0.01, 0.02]


def _facts(rank: int) -> dict:
    return {
        "rank": rank,
        "initialized": True,
        "initialized_after_destroy": False,
        "seeded_init_identical": True,
        "unseeded_init_identical": False,
        "after_ddp_identical": True,
        "after_ddp_equals_rank0": True,
        "subgroup_sum": 1.0 + rank,
        "subgroup_expected": 1.0 + rank,
        "reload_equal": True,
        "ddp_state_dict_keys": ["module.weight", "module.bias"],
        "wrapped_state_dict_loads": False,
        "wrapped_state_dict_error": "Error(s) in loading state_dict for Linear:",
        "env": {"LOCAL_RANK": str(rank), "WORLD_SIZE": "2"},
    }


def test_setup_facts_are_judged_and_each_wrong_fact_fails():
    finding = S.judge_torchrun_env([_facts(0), _facts(1)], 2)
    assert finding.verdict.value == "holds" and "new_group sums 2 in the odd group" in finding.evidence
    for key, value, message in (
        ("initialized_after_destroy", True, "left it initialized"),
        ("after_ddp_equals_rank0", False, "broadcast rank 0"),
        ("ddp_state_dict_keys", ["weight"], "state_dict keys"),
        ("unseeded_init_identical", True, "different seeds"),
    ):
        facts = copy.deepcopy(_facts(1))
        facts[key] = value
        wrong = S.judge_torchrun_env([_facts(0), facts], 2)
        assert wrong.verdict.value == "fails" and message in wrong.evidence


def test_sharded_training_is_within_the_bound_and_a_summed_gradient_is_far_outside():
    """The training bound on its own terms, in one process: two shards' gradients averaged (what
    DDP computes) stay inside it against full-batch training; summed (a broken all-reduce) are far
    out. At the quick size, as the launched workers run in CI."""
    import copy

    from torch import nn

    size = LT.TRAIN_SIZES["quick"]
    width, batch, steps, d = size["width"], size["batch"], size["steps"] + 1, 256
    x, y = DP.make_batch(batch, d, d, 0)
    base = DP.make_mlp(d, width, d, 0)

    def train(shards: int, reduce) -> torch.Tensor:
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(steps):
            grads = []
            for r in range(shards):
                model.zero_grad()
                nn.functional.mse_loss(model(x[r::shards]), y[r::shards]).backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for p, *g in zip(model.parameters(), *grads):
                p.grad = reduce(torch.stack(g))
            opt.step()
        return DP.flat_params(model)

    numels = [p.numel() for p in base.parameters()]
    bound = DP.train_tolerance(batch, width)
    full = train(1, lambda g: g[0])
    averaged = max(DP.tensor_errors(train(2, lambda g: g.mean(0)), full, numels))
    summed = max(DP.tensor_errors(train(2, lambda g: g.sum(0)), full, numels))
    assert averaged <= bound < summed / 100, (averaged, bound, summed)


def test_spawn_and_launch_slips_are_errata_the_launched_ranks_decide():
    slip = {
        "args": 2,
        "args_type": "int",
        "raised": True,
        "error": "TypeError: Value after * must be an iterable",
    }
    f = S.judge_spawn([_facts(0), _facts(1)], slip, 2)
    assert f.verdict.value == "holds" and f.errata[0].kind.value == "typo"
    assert (
        S.judge_spawn([_facts(0), _facts(1)], {**slip, "args_type": "tuple", "raised": False}, 2).errata == ()
    )
    broken = copy.deepcopy(_facts(1))
    broken["reload_equal"] = False
    bad = S.judge_spawn([_facts(0), broken], slip, 2)
    assert bad.verdict.value == "fails" and "reload" in bad.evidence
    ranks = [
        {
            "rank": r,
            "fixed_local_rank": r,
            "env_local_rank": r,
            "argv": ["--local-rank=0"],
            "notes_parser": {"ok": False, "error": "unrecognized arguments: --local-rank=0"},
        }
        for r in (0, 1)
    ]
    g = S.judge_notes_launch(ranks, "FutureWarning: ... is deprecated", 2)
    assert g.verdict.value == "holds" and g.errata[0].kind.value == "deprecated API"
    fine = [{**r, "notes_parser": {"ok": True}} for r in ranks]
    assert S.judge_notes_launch(fine, "", 2).errata == ()
    assert S.judge_notes_launch([{**ranks[0], "env_local_rank": 1}, ranks[1]], "", 2).verdict.value == "fails"


# ---- from a launch to a judgement (`launched_*`), on rank files written by hand -------------------


def _launch(out_dir, rows: list[dict], returncodes=(0,), prefix="train"):
    """A finished launch whose ranks wrote `rows` (nothing was started: no process to track)."""
    import json

    from harness.run.launch import Launch

    out_dir.mkdir(parents=True, exist_ok=True)
    for r in rows:
        (out_dir / f"{prefix}-rank{r['rank']}.json").write_text(json.dumps(r))
    return Launch([["torchrun"]], list(returncodes), False, 1.0, out_dir, ["rank 1: boom"], 29500)


class _Runs:
    """`cases._lib.dist_launches.Runs`' training launches, read from hand-written rank files."""

    def __init__(self, root, returncodes=(0,)):
        self.root, self.returncodes = root, returncodes

    def train(self, device, world, nnodes=1):
        rows = _train_rows(world)
        for r in rows:
            r["modes"]["ddp"]["step_s"] = [0.04 / world, 0.04 / world]
        return _launch(self.root / f"w{world}", rows, self.returncodes)


def test_ddp_beyond_one_rank_is_judged_against_the_one_rank_run(tmp_path):
    from cases.parallel import dp_vs_ddp

    judged = dp_vs_ddp.launched_ddp(_Runs(tmp_path), "cpu", 2)
    assert judged.check == "ddp_scaling-w2" and judged.group == "parallel.dp_vs_ddp w2 cpu"
    assert judged.measured["scaling_efficiency"] == pytest.approx(1.0)
    info, extra, times = judged.row
    assert extra["scaling_efficiency"] == judged.measured["scaling_efficiency"] and times == [0.02, 0.02]
    alone = dp_vs_ddp.launched_ddp(_Runs(tmp_path), "cpu", 1)
    assert alone.finding is None and alone.measured is None and alone.row[0]["variant"] == "ddp"


def test_a_failed_launch_is_reported_with_its_output_before_anything_is_judged(tmp_path):
    from cases.parallel import dp_vs_ddp
    from harness.run.launch import LaunchFailed

    with pytest.raises(LaunchFailed, match=r"(?s)train \(ddp\): exit codes \[1\].*rank 1: boom"):
        dp_vs_ddp.launched_ddp(_Runs(tmp_path, returncodes=(1,)), "cpu", 2)


def test_world_sizes_come_from_the_environment_else_the_hardware(monkeypatch):
    from harness.run.launch import world_sizes

    monkeypatch.delenv("SUITE_WORLD_SIZES", raising=False)
    assert world_sizes("cpu") == [1, 2, 4]
    monkeypatch.setenv("SUITE_WORLD_SIZES", "2, 8")
    assert world_sizes("cpu") == world_sizes("cuda") == [2, 8]
