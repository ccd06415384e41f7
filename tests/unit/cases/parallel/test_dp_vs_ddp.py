"""The judges of `cases/parallel/dp_vs_ddp.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import pytest

from cases._lib.data_parallel import reduction_tolerance
from cases.parallel import dp_vs_ddp
from harness.contract.record import Verdict
from tests.rank_files import train_rows

# ---- parallel.* ----------------------------------------------------------------------------------


def test_ddp_faster_than_dp():
    dp, ddp = [0.1 + 1e-3 * i for i in range(20)], [0.05 + 1e-3 * i for i in range(20)]
    assert dp_vs_ddp.judge_ddp_faster_than_dp(dp, ddp, 2, 0.05).verdict is Verdict.HOLDS
    assert dp_vs_ddp.judge_ddp_faster_than_dp(ddp, dp, 2, 0.05).verdict is Verdict.FAILS
    assert dp_vs_ddp.judge_ddp_faster_than_dp(dp, dp, 2, 0.05).verdict is Verdict.DEPENDS
    assert dp_vs_ddp.judge_ddp_faster_than_dp([0.1] * 5, [0.05] * 5, 2, 0.05).verdict is Verdict.HOLDS


U32 = 2.0**-24


def test_ddp_full_batch_holds_fails_and_concludes_nothing_on_a_rising_loss():
    bound = reduction_tolerance(U32, 32, 64, 32, 2)
    falling = [1.31, 1.19]
    assert dp_vs_ddp.judge_ddp_full_batch(4.6e-8, 4.6e-8, bound, True, falling, 2, 3).verdict is Verdict.HOLDS
    assert dp_vs_ddp.judge_ddp_full_batch(1e-3, 4.6e-8, bound, True, falling, 2, 3).verdict is Verdict.FAILS
    assert (
        dp_vs_ddp.judge_ddp_full_batch(4.6e-8, 4.6e-8, bound, False, falling, 2, 3).verdict is Verdict.FAILS
    )
    assert dp_vs_ddp.judge_ddp_full_batch(4.6e-8, 4.6e-8, bound, True, [1.0, 9.0], 2, 3).verdict is None


def test_ddp_device_ids_list_fails_where_two_devices_are_refused():
    refused = "ValueError: device_ids can only be None or contain a single element."
    f = dp_vs_ddp.judge_ddp_device_ids(refused, [], "", "2.13")
    assert f.verdict is Verdict.FAILS and f.errata == ()
    assert "DDP accepts it" in f.evidence and "device_ids=[rank]" in f.evidence
    assert dp_vs_ddp.judge_ddp_device_ids("", [0, 1], "", "1.8").verdict is Verdict.HOLDS


def test_two_nodes_depend_on_the_stand_in_launcher_and_fail_beyond_the_bound():
    within = dp_vs_ddp.judge_two_nodes(1e-8, 2.5e-6, 7, 9.0)
    assert within.verdict is Verdict.DEPENDS and "torchrun" in within.evidence
    assert "torch.distributed.launch" in within.evidence
    assert dp_vs_ddp.judge_two_nodes(1e-2, 2.5e-6, 7, 9.0).verdict is Verdict.FAILS


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
    """`cases._launch.dist_launches.Runs`' training launches, read from hand-written rank files."""

    def __init__(self, root, returncodes=(0,)):
        self.root, self.returncodes = root, returncodes

    def train(self, device, world, nnodes=1):
        rows = train_rows(world)
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
    rows = train_rows(4)
    _, crowded = dp_vs_ddp.ddp_scaling(rows, [0.01], train_rows(1), cores=2)
    assert "4 ranks on 2 cores" in crowded.evidence
    _, roomy = dp_vs_ddp.ddp_scaling(rows, [0.01], train_rows(1), cores=4)
    assert "cores" not in roomy.evidence
    assert alone.finding is None and alone.measured is None and alone.row[0]["variant"] == "ddp"


def test_a_failed_launch_is_reported_with_its_output_before_anything_is_judged(tmp_path):
    from cases.parallel import dp_vs_ddp
    from harness.run.launch import LaunchFailed

    with pytest.raises(LaunchFailed, match=r"(?s)train \(ddp\): exit codes \[1\].*rank 1: boom"):
        dp_vs_ddp.launched_ddp(_Runs(tmp_path, returncodes=(1,)), "cpu", 2)
