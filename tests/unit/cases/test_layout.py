"""The judges of `cases/layout.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import pytest

from cases import layout
from harness.contract.record import ErratumKind, Verdict

# ---- layout.contiguous -----------------------------------------------------------------------------


def test_layout_c_snippet_typo_and_no_compiler():
    f = layout.judge_notes_is_contiguous(True, "e", "", "", "", "expected ';' before 'else'")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    missing = layout.judge_notes_is_contiguous(True, "e", "", "", "", None)
    assert missing.errata == () and "not compiled" in missing.evidence
    assert layout.judge_notes_is_contiguous(False, "e", "", "", "", "x").verdict is Verdict.FAILS


def test_layout_c_snippet_does_not_compile_as_written():
    errors = layout._c_compile_errors(layout.NOTES_IS_CONTIGUOUS_C)
    if errors is None:
        pytest.skip("no C compiler")
    assert "stride" in errors and ";" in errors
    repaired = layout.NOTES_IS_CONTIGUOUS_C.replace("stride[d]==z", "self->stride[d]==z").replace(
        "z*=self->size[d]\n", "z*=self->size[d];\n"
    )
    assert layout._c_compile_errors(repaired) == ""


def test_layout_view_of_noncontiguous_is_a_wrong_statement():
    counts = {"ok": 5, "raised": 3, "mismatch": 0}
    f = layout.judge_view_rule(counts, "view size is not compatible", "run", "t().view(2,2,3) succeeds")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT]
    assert layout.judge_view_rule(counts, "view size is not compatible", "run").errata == ()
    assert layout.judge_view_rule({**counts, "mismatch": 1}, "x", "run", "y").verdict is Verdict.FAILS
    assert layout.judge_view_rule(counts, "", "run").verdict is Verdict.FAILS


def test_layout_strides_prose_is_a_formula_erratum():
    wrong = layout.judge_notes_snippet(None, True, 13, "", ((3, 4), (4, 1), (1, 4)))
    assert wrong.verdict is Verdict.HOLDS
    assert [e.kind for e in wrong.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    # Strides as the notes say them: no erratum.
    assert layout.judge_notes_snippet(None, True, 13, "", ((3, 4), (3, 1), (3, 1))).errata == ()
    assert layout.judge_notes_snippet(None, False, 13, "", ((3, 4), (4, 1), (1, 4))).verdict is Verdict.FAILS


def test_layout_copies_and_timed_layouts():
    good = {"transposed_contiguous": ((48, 1), True, False, True), "clone": ((48, 1), True, False, True)}
    assert layout.judge_copies_are_row_major(good).verdict is Verdict.HOLDS
    shared = {**good, "transposed_contiguous": ((1, 64), False, True, True)}
    assert layout.judge_copies_are_row_major(shared).verdict is Verdict.FAILS
    assert layout.judge_timed_layouts({"row-major": True, "column-major": True}).verdict is Verdict.HOLDS
    assert layout.judge_timed_layouts({"row-major": True, "column-major": False}).verdict is Verdict.FAILS


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


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- layout.contiguous ---------------------------------------------------------------------------


def test_layout_is_contiguous_snippet_indentation_is_a_typo_and_agreement_decides():
    f = layout.judge_notes_is_contiguous(
        True, "e", "empty view", "expand(1,)", snippet_error="IndentationError"
    )
    assert f.verdict is Verdict.HOLDS
    assert _kinds(f) == [ErratumKind.WRONG_SHAPE_OR_FORMULA] * 2 + [ErratumKind.TYPO]
    assert layout.judge_notes_is_contiguous(False, "e", "", "", "IndentationError").verdict is Verdict.FAILS
    assert layout.judge_notes_is_contiguous(True, "e", "", "", "").errata == ()


def test_layout_notes_snippet_compiles_only_once_repaired():
    assert "IndentationError" in layout._compile_error(layout.NOTES_IS_CONTIGUOUS_SOURCE)
    repaired = layout.NOTES_IS_CONTIGUOUS_SOURCE.replace("       else:", "      else:").replace("\t", "  ")
    assert layout._compile_error(repaired) == ""


def test_layout_view_rule_follows_the_brute_force_agreement():
    counts = {"ok": 265, "raised": 35, "mismatch": 0}
    assert layout.judge_view_rule(counts, "view size is not compatible", "run").verdict is Verdict.HOLDS
    assert layout.judge_view_rule({**counts, "mismatch": 1}, "x", "run").verdict is Verdict.FAILS
    assert layout.judge_view_rule(counts, "", "run").verdict is Verdict.FAILS  # transposed view did not raise
    assert layout.judge_view_rule({**counts, "raised": 0}, "x", "run").verdict is Verdict.FAILS


def test_layout_reshape_copies_and_view_statement():
    counts = {"view": 194, "copy": 35, "view_of_noncontiguous": 13, "mismatch": 0}
    f = layout.judge_reshape_rule(counts, "e", "t().reshape(2,2,3) shares storage")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_STATEMENT]
    assert layout.judge_reshape_rule(counts, "e", "").errata == ()
    assert layout.judge_reshape_rule({**counts, "mismatch": 2}, "e", "").verdict is Verdict.FAILS
    assert (
        layout.judge_contiguous_copies({"self": 9, "copied": 3, "mismatch": 0}, "r").verdict is Verdict.HOLDS
    )
    assert (
        layout.judge_contiguous_copies({"self": 9, "copied": 3, "mismatch": 1}, "r").verdict is Verdict.FAILS
    )
    views = {
        "views": 9,
        "noncontiguous_views": 0,
        "source_changed": 0,
        "permutes": 4,
        "noncontiguous_permutes": 4,
    }
    g = layout.judge_view_keeps_contiguity(views, "run")
    assert g.verdict is Verdict.HOLDS and _kinds(g) == [ErratumKind.WRONG_STATEMENT]
    assert layout.judge_view_keeps_contiguity({**views, "source_changed": 9}, "run").errata == ()


def test_layout_torch_range_deprecation_is_observed():
    f = layout.judge_notes_snippet(None, True, 13, deprecation="torch.range is deprecated")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.DEPRECATED_API]
    assert layout.judge_notes_snippet(None, True, 12, deprecation="").errata == ()
    assert layout.judge_notes_snippet("missing end", False, 13, "").verdict is Verdict.FAILS
