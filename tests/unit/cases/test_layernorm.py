"""The judges of `cases/layernorm.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import layernorm
from harness.contract.record import ErratumKind, Verdict


def test_layernorm_indentation_slip_is_a_typo():
    f = layernorm.judge_notes_snippet("IndentationError: unindent (line 6)", True)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert not layernorm.judge_notes_snippet("", True).errata
    assert layernorm.judge_notes_snippet("", False).verdict is Verdict.FAILS


def test_layernorm_relation_verdict_follows_the_measured_relation():
    assert layernorm.judge_relation(8e-16, 1e-12, 3e-3, 512).verdict is Verdict.HOLDS
    assert layernorm.judge_relation(1e-6, 1e-12, 3e-3, 512).verdict is Verdict.FAILS
    assert layernorm.judge_relation(8e-16, 1e-6, 3e-3, 512).verdict is Verdict.FAILS
