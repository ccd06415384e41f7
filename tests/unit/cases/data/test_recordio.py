"""The judges of `cases/data/recordio.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import get_case
from cases.data import recordio
from harness.contract import rules
from harness.contract.record import Verdict


def test_speed_pairs_the_notes_never_claim_are_context_alike():
    """conv.dilated, conv.im2col and conv.transposed: the notes teach equivalences, not speed-ups;
    recordio's packed reads are the notes' recommendation, a claim."""
    for case_id in ("conv.dilated", "conv.im2col", "conv.transposed"):
        case = get_case(case_id)
        assert not [r for r in rules.claimed(case.verdict)], case_id
        assert not [c for c in case.claims if c.kind.name == "SPEED"], case_id
    recordio_rules = list(rules.claimed(get_case("data.recordio").verdict))
    assert [r.claim for r in recordio_rules] == ["faster"]


# ---- data.recordio -----------------------------------------------------------------------------


def test_recordio_judges_from_observations():
    assert recordio.judge_layout(True, [], offsets=[0, 5768, 12520, 19304]).verdict is Verdict.HOLDS
    assert recordio.judge_layout(True, [], offsets=[0, 5768, 12524, 19312]).verdict is Verdict.FAILS
    assert recordio.judge_embedded_magic(True, True, [1, 2, 2, 3, 0], [8, 16, 20]).verdict is Verdict.HOLDS
    assert recordio.judge_embedded_magic(True, True, [0, 0], [8, 16, 20]).verdict is Verdict.FAILS
    assert recordio.judge_embedded_magic(False, True, [1, 2, 2, 3, 0], [8]).verdict is Verdict.FAILS
    named = [("x: bad magic at byte offset 8", True)] * 6
    assert recordio.judge_corruption(True, named).verdict is Verdict.HOLDS
    assert (
        recordio.judge_corruption(True, [*named[:5], ("read without error", False)]).verdict is Verdict.FAILS
    )
    assert recordio.judge_corruption(False, named).verdict is Verdict.FAILS
    fields = ["flag", "label", "id", "id2"]
    assert recordio.judge_irheader(24, True, True, True, fields).verdict is Verdict.HOLDS
    assert recordio.judge_irheader(32, True, True, True, fields).verdict is Verdict.FAILS
    assert recordio.judge_irheader(24, True, False, True, fields).verdict is Verdict.FAILS
    assert recordio.judge_irheader(24, True, True, True, ["flag", "label", "id"]).verdict is Verdict.FAILS
