"""The judges of `cases/conv/pooling.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.conv import pooling
from harness.contract.record import ErratumKind, Verdict


def test_lp_pool_verdict_and_erratum_follow_the_observation():
    right = pooling.judge_lp_pool(rel_err=1e-7, bound=5e-7, signed_sum_gap=0.0)
    assert right.verdict is Verdict.HOLDS and not right.errata
    wrong = pooling.judge_lp_pool(rel_err=1e-3, bound=5e-7, signed_sum_gap=0.0)
    assert wrong.verdict is Verdict.FAILS
    not_a_norm = pooling.judge_lp_pool(rel_err=1e-7, bound=5e-7, signed_sum_gap=0.8)
    assert not_a_norm.verdict is Verdict.HOLDS, "an erratum never decides the technique"
    assert [e.kind for e in not_a_norm.errata] == [ErratumKind.WRONG_STATEMENT]


def test_fractional_max_pool_fails_on_any_broken_part():
    assert pooling.judge_fractional_max_pool(True, True, True, True).verdict is Verdict.HOLDS
    for broken in range(4):
        parts = [True] * 4
        parts[broken] = False
        finding = pooling.judge_fractional_max_pool(*parts)
        assert finding.verdict is Verdict.FAILS and "NO" in finding.evidence


def test_the_checks_run_and_find_the_notes_lp_pool_statement_wrong():
    import torch

    finding = pooling.check_lp_pool(torch.device("cpu"))
    assert finding.verdict is Verdict.HOLDS and finding.errata  # p = 1 on signed inputs is Σx
    assert pooling.check_fractional_max_pool(torch.device("cpu")).verdict is Verdict.HOLDS
