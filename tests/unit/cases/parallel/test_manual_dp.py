"""The judges of `cases/parallel/manual_dp.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.parallel import manual_dp
from harness.contract.record import Verdict


def test_more_gpus_more_throughput():
    k_t1 = [0.2 + 1e-3 * i for i in range(10)]
    tk = [0.11 + 1e-3 * i for i in range(10)]
    assert manual_dp.judge_more_gpus_more_throughput(k_t1, tk, 2, 0.05).verdict is Verdict.HOLDS
    assert manual_dp.judge_more_gpus_more_throughput(tk, k_t1, 2, 0.05).verdict is Verdict.FAILS
    assert manual_dp.judge_more_gpus_more_throughput(tk, tk, 2, 0.05).verdict is Verdict.DEPENDS


def test_manual_dp_verdict_follows_its_error_against_one_device():
    from cases.parallel import manual_dp

    assert manual_dp.judge_manual_dp(1e-7, 7e-7, 2).verdict is Verdict.HOLDS
    assert manual_dp.judge_manual_dp(1e-3, 7e-7, 2).verdict is Verdict.FAILS
