"""The judges of `cases/broadcast/outer.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes slipped."""

from __future__ import annotations

from cases.broadcast import outer as broadcast
from harness.contract.record import Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


def test_broadcast_notes_outer_product_decides_on_shape_and_values():
    assert broadcast.judge_notes_outer((3, 5, 5), True, False, (3, 5)).verdict is Verdict.HOLDS
    assert broadcast.judge_notes_outer((3, 5, 5), True, False, (3, 5)).errata == ()
    # Transposed: the notes' ⊗ with its operands' shapes swapped, a shape slip repaired and listed.
    f = broadcast.judge_notes_outer((3, 5, 5), False, True, (3, 5))
    assert f.verdict is Verdict.HOLDS and "swapped" in f.evidence
    assert [e.kind.value for e in f.errata] == ["shape slip"]
    # (s,1,c) * (s,1,c): an elementwise product, no outer product.
    assert broadcast.judge_notes_outer((3, 1, 5), False, False, (3, 5)).verdict is Verdict.FAILS
    assert broadcast.judge_notes_outer((3, 5, 5), False, False, (3, 5)).verdict is Verdict.FAILS


def test_broadcast_no_copies_fails_where_an_op_allocates_more_than_its_output():
    out = 512 * 512 * 4
    f = broadcast.judge_no_copies({"add": out, "mul": out}, out, 3 * out)
    assert f.verdict is Verdict.HOLDS and "the output alone" in f.evidence
    # An implementation that expands the operands into copies first allocates three outputs' worth.
    f = broadcast.judge_no_copies({"add": 3 * out, "mul": out}, out, 3 * out)
    assert f.verdict is Verdict.FAILS and "MORE" in f.evidence
