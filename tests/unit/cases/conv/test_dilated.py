"""The judges of `cases/conv/dilated.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.conv import dilated
from cases.data import recordio
from harness.contract.record import ErratumKind, Verdict


def test_gridding_needs_a_larger_field_no_holes_and_a_control_that_shows_holes():
    assert dilated.judge_gridding(19, 11, 0, 361, 120, 169).verdict is Verdict.HOLDS
    assert dilated.judge_gridding(19, 11, 4, 361, 120, 169).verdict is Verdict.FAILS  # gridding
    assert dilated.judge_gridding(11, 11, 0, 361, 120, 169).verdict is Verdict.FAILS  # not enlarged
    blind = dilated.judge_gridding(19, 11, 0, 361, 0, 169)
    assert blind.verdict is Verdict.FAILS and "cannot see gridding" in blind.evidence


def test_receptive_field_and_recordio_layout_are_judged_on_the_technique():
    from cases.conv import dilated

    right = dilated.judge_receptive_field([("d=2,2,2", 13, 13, 7)])
    assert right.verdict is Verdict.HOLDS and right.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert dilated.judge_receptive_field([("d=2,2,2", 13, 11, 7)]).verdict is Verdict.FAILS
    assert not dilated.judge_receptive_field([("d=1", 7, 7, 7)]).errata
    layout = recordio.judge_layout(True, [(1, 12, 16)])
    assert layout.verdict is Verdict.HOLDS and layout.errata
    assert (
        recordio.judge_layout(False, []).verdict is Verdict.FAILS
        and not recordio.judge_layout(True, []).errata
    )
