"""The judges of `cases/conv/pooling.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import torch

from cases.conv import pooling
from harness.contract.record import Verdict

NORM = {1.0: (0.0, 0), 2.0: (1e-8, 0), 3.0: (0.0, 0)}


def test_lp_pool_holds_only_where_every_output_is_the_norm():
    assert pooling.judge_lp_pool(rel_err=1e-7, bound=5e-7, signed=NORM).verdict is Verdict.HOLDS
    wrong = pooling.judge_lp_pool(rel_err=1e-3, bound=5e-7, signed=NORM)
    assert wrong.verdict is Verdict.FAILS
    # What LPPool2d gives on signed inputs: Σx for p = 1, NaN for odd p where Σx³ < 0.
    signed = {1.0: (1.27, 0), 2.0: (1e-8, 0), 3.0: (0.4, 12)}
    not_a_norm = pooling.judge_lp_pool(rel_err=1e-7, bound=5e-7, signed=signed)
    assert not_a_norm.verdict is Verdict.FAILS and not_a_norm.errata == ()
    assert "x.abs()" in not_a_norm.evidence and "12 NaN" in not_a_norm.evidence
    assert pooling.judge_lp_pool(1e-7, 5e-7, {}).verdict is Verdict.FAILS


def test_fractional_max_pool_fails_on_any_broken_part():
    assert pooling.judge_fractional_max_pool(True, True, "", True, True).verdict is Verdict.HOLDS
    for broken in range(5):
        parts = [True, True, "", True, True]
        parts[broken] = "steps 3" if broken == 2 else False
        finding = pooling.judge_fractional_max_pool(*parts)
        assert finding.verdict is Verdict.FAILS and "NO" in finding.evidence


def test_window_steps_are_read_from_the_starts():
    assert pooling._steps_wrong(torch.tensor([0, 2, 4, 5, 7, 9, 11]), 13, 2) == ""
    # Windows not spanning the input (a start off 0), or steps outside ⌊α⌋, ⌈α⌉: not its windows.
    assert "first at 0" in pooling._steps_wrong(torch.tensor([1, 2, 4, 6, 8, 10, 11]), 13, 2)
    assert "step by [1, 2, 3]" in pooling._steps_wrong(torch.tensor([0, 3, 4, 7, 8, 9, 11]), 13, 2)
    assert pooling._steps_wrong(torch.tensor([0, 1, 2, 3, 4, 5, 6]), 13, 2) != ""


def test_the_checks_run_and_find_the_notes_lp_pool_statement_wrong():
    finding = pooling.check_lp_pool(torch.device("cpu"))
    assert finding.verdict is Verdict.FAILS and not finding.errata  # p = 1 on signed inputs is Σx
    assert pooling.check_fractional_max_pool(torch.device("cpu")).verdict is Verdict.HOLDS
