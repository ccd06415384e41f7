"""Re-judged findings of layout, autograd, broadcasting, conv shapes, containers and training:
each verdict follows from its observation, each erratum appears only where the notes were
wrong, and an erratum never decides the verdict."""

from __future__ import annotations

from cases import layout
from harness.record import ErratumKind, Verdict


def test_layout_is_contiguous_corners_are_formula_errata():
    f = layout.judge_notes_is_contiguous(True, "e", "empty view", "expand(1,)")
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA] * 2
    assert layout.judge_notes_is_contiguous(True, "e", "", "").errata == ()
    assert layout.judge_notes_is_contiguous(False, "e", "", "").verdict is Verdict.FAILS


def test_layout_reshape_and_view_statements_are_errata():
    counts = {"view": 5, "copy": 3, "view_of_noncontiguous": 2}
    f = layout.judge_reshape_rule(counts, "e", "x.reshape(2,)")
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert layout.judge_reshape_rule(counts, "e", "").errata == ()
    assert layout.judge_reshape_rule({**counts, "copy": 0}, "e", "").verdict is Verdict.FAILS
    views = {"views": 9, "noncontiguous_views": 0, "permutes": 4, "noncontiguous_permutes": 4}
    g = layout.judge_view_keeps_contiguity(views, "run")
    assert g.verdict is Verdict.HOLDS and g.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert layout.judge_view_keeps_contiguity({**views, "noncontiguous_views": 1}, "run").errata == ()
    assert layout.judge_view_keeps_contiguity({**views, "noncontiguous_permutes": 3}, "run").verdict is (
        Verdict.FAILS
    )


def test_layout_torch_range_is_a_deprecated_api_erratum():
    f = layout.judge_notes_snippet("range() missing end", True, 13)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.DEPRECATED_API
    assert layout.judge_notes_snippet(None, True, 13).errata == ()
    assert layout.judge_notes_snippet(None, False, 13).verdict is Verdict.FAILS
