"""The judges of `cases/broadcast.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import broadcast
from harness.contract.record import ErratumKind, Verdict


def test_broadcast_notes_array_shapes_are_errata():
    wrong = [("b.shape is (1,6)", (1, 6), (1, 5))]
    f = broadcast.judge_notes_examples(True, (5, 5, 3), True, wrong)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert "(1, 5)" in f.errata[0].evidence
    assert broadcast.judge_notes_examples(False, (5, 5, 3), True, wrong).verdict is Verdict.FAILS


def test_broadcast_rule_one_is_an_erratum_and_rule_two_decides():
    from cases import broadcast

    counts = {"compatible": 120, "incompatible": 40}
    f = broadcast.judge_rules(counts, "run", "((), ())")
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert broadcast.judge_rules(counts, "run", "").errata == ()
    assert broadcast.judge_rules({**counts, "incompatible": 0}, "run", "").verdict is Verdict.FAILS


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- broadcast.rules -----------------------------------------------------------------------------


def test_broadcast_rule_two_decides_and_rule_one_is_a_wrong_statement():
    from cases import broadcast

    counts = {"compatible": 127, "incompatible": 38, "mismatch": 0}
    f = broadcast.judge_rules(counts, "run", "((), ()) broadcasts to ()")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_STATEMENT]
    assert broadcast.judge_rules(counts, "run", "").errata == ()  # had 0-dim tensors refused, rule 1 stands
    assert broadcast.judge_rules({**counts, "mismatch": 1}, "run", "x").verdict is Verdict.FAILS
    assert broadcast.judge_rules({**counts, "compatible": 0}, "run", "").verdict is Verdict.FAILS
    assert broadcast.judge_notes_examples(True, (5, 5, 3), True).verdict is Verdict.HOLDS
    assert broadcast.judge_notes_examples(True, (5, 5, 3), False).verdict is Verdict.FAILS
    assert broadcast.judge_notes_examples(False, (5, 5, 3), True).verdict is Verdict.FAILS
