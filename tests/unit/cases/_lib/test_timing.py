"""Findings computed from what was observed, errata apart: a different observation gives a
different verdict, and an erratum never decides the technique."""

from __future__ import annotations

from harness.contract.record import Verdict


def test_a_timed_faster_claim_follows_the_gain_policy_and_the_load():
    """loss.cross_entropy's and clip.grad_norm's timed checks: an interval above the ±5% band
    holds (busy or not: loss.cross_entropy read depends under load though [1.49, 1.57] and
    [1.37, 1.42] both clear the band), inside it or below it fails on a quiet machine; across an
    edge, or short of a clear gain on a busy machine, could not judge, never depends (noise is not
    a condition)."""
    from cases._lib.timing import judge_faster
    from harness.contract.gain import Ratio

    def verdict(lo, hi, busy=None):
        return judge_faster(Ratio((lo + hi) / 2, lo, hi, 12), busy, "slow ÷ fast")

    assert verdict(1.34, 1.46)[0] is Verdict.HOLDS
    assert verdict(0.98, 1.03)[0] is Verdict.FAILS  # no measurable difference: not faster
    assert verdict(0.20, 0.30)[0] is Verdict.FAILS
    assert verdict(1.02, 1.30)[0] is Verdict.COULD_NOT_JUDGE  # crosses 1.05: too noisy to tell
    held, said = verdict(1.37, 1.42, busy="machine busy (load average 7.1 on 2 cores)")
    assert held is Verdict.HOLDS and "load average 7.1" in said
    busy, said = verdict(0.20, 0.30, busy="machine busy (load average 7.1 on 2 cores)")
    assert busy is Verdict.COULD_NOT_JUDGE and "machine busy" in said
