"""The judges of `cases/conv/dilated.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import torch

from cases.conv import dilated
from harness.contract.record import Verdict


def test_gridding_needs_a_larger_field_no_holes_and_a_control_that_shows_holes():
    assert dilated.judge_gridding(19, 11, 0, 361, 120, 169).verdict is Verdict.HOLDS
    assert dilated.judge_gridding(19, 11, 4, 361, 120, 169).verdict is Verdict.FAILS  # gridding
    assert dilated.judge_gridding(11, 11, 0, 361, 120, 169).verdict is Verdict.FAILS  # not enlarged
    blind = dilated.judge_gridding(19, 11, 0, 361, 0, 169)
    assert blind.verdict is Verdict.FAILS and "cannot see gridding" in blind.evidence


def test_receptive_field_fails_where_f_as_the_kernel_size_misses_a_dilated_stack():
    notes_miss = dilated.judge_receptive_field([("d=2,2,2", 13, 13, 7), ("undilated", 11, 11, 11)])
    assert notes_miss.verdict is Verdict.FAILS and notes_miss.errata == ()
    assert "f = d(k−1)+1" in notes_miss.evidence
    # Had the notes' recursion matched every stack (what a dilation-aware f gives), it holds.
    assert dilated.judge_receptive_field([("d=1", 7, 7, 7), ("s=2", 11, 11, 11)]).verdict is Verdict.HOLDS
    # A measurement the span recursion misses too: the reference is in doubt, never holds.
    assert dilated.judge_receptive_field([("d=2,2,2", 13, 11, 13)]).verdict is Verdict.FAILS
    assert dilated.judge_receptive_field([]).verdict is Verdict.FAILS


def test_receptive_field_observed_fails():
    assert dilated.check_receptive_field(torch.device("cpu")).verdict is Verdict.FAILS
