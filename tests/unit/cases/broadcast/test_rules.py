"""The judges of `cases/broadcast/rules.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes slipped."""

from __future__ import annotations

from cases.broadcast import rules as broadcast
from harness.contract.record import ErratumKind, Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


def test_broadcast_notes_array_shapes_are_shape_slips():
    wrong = [("b.shape is (1,6)", (1, 6), (1, 5))]
    f = broadcast.judge_notes_examples(True, (5, 5, 3), True, wrong)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.SHAPE_SLIP]
    assert "(1, 5)" in f.errata[0].evidence
    assert broadcast.judge_notes_examples(False, (5, 5, 3), True, wrong).verdict is Verdict.FAILS


def test_broadcast_rule_two_decides_on_every_pair():
    counts = {"compatible": 127, "incompatible": 38, "mismatch": 0}
    f = broadcast.judge_rules(counts, "run")
    assert f.verdict is Verdict.HOLDS and f.errata == ()
    # A rule that aligns from the left, or forgets "missing", disagrees with torch on some pair.
    assert broadcast.judge_rules({**counts, "mismatch": 1}, "run").verdict is Verdict.FAILS
    assert broadcast.judge_rules({**counts, "compatible": 0}, "run").verdict is Verdict.FAILS
    assert broadcast.judge_rules({**counts, "incompatible": 0}, "run").verdict is Verdict.FAILS


def test_broadcast_rule_one_is_a_claim_that_fails_where_0_dim_tensors_broadcast():
    seen = [((), (), ()), ((), (3,), (3,))]
    f = broadcast.judge_zero_dim(seen)
    assert f.verdict is Verdict.FAILS and f.errata == () and "2 of 2" in f.evidence
    # A torch that refused 0-dim operands would bear the notes out.
    assert broadcast.judge_zero_dim([((), (), None), ((), (3,), None)]).verdict is Verdict.HOLDS


def test_broadcast_outer_examples_decide():
    assert broadcast.judge_notes_examples(True, (5, 5, 3), True).verdict is Verdict.HOLDS
    assert broadcast.judge_notes_examples(True, (5, 5, 3), False).verdict is Verdict.FAILS
    assert broadcast.judge_notes_examples(False, (5, 5, 3), True).verdict is Verdict.FAILS
    # (1,r,c) + (1,r,c) by mistake: no pair axis.
    assert broadcast.judge_notes_examples(True, (1, 5, 3), True).verdict is Verdict.FAILS
