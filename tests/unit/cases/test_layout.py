"""The judges of `cases/layout.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and none of them lists an erratum: the notes' false
statements are claims that fail, their slips are listed by the notes' snippet check."""

from __future__ import annotations

from cases import layout
from harness.contract.record import Verdict

# ---- layout.contiguous -----------------------------------------------------------------------------


def test_layout_is_contiguous_depends_on_empty_tensors_and_fails_on_a_nonempty_disagreement():
    agree = {"n": 239, "disagree": 0, "empty": 61, "empty_disagree": 0}
    assert layout.judge_notes_is_contiguous(agree, "run", "", "").verdict is Verdict.HOLDS
    # Observed with torch 2.13: only empty views disagree (torch calls them all contiguous).
    empty = {**agree, "empty_disagree": 36}
    f = layout.judge_notes_is_contiguous(empty, "run", "", "shape (2, 0) stride (1, 2)")
    assert f.verdict is Verdict.DEPENDS and "non-empty" in f.evidence and f.errata == ()
    # A loop that missed the size-1 skip would disagree on non-empty views: fails.
    nonempty = {**agree, "disagree": 17}
    assert layout.judge_notes_is_contiguous(nonempty, "run", "shape (2, 1)", "").verdict is Verdict.FAILS
    assert layout.judge_notes_is_contiguous({**agree, "n": 0}, "run", "", "").verdict is Verdict.FAILS


def test_layout_formula_fails_where_size_one_strides_disagree():
    f = layout.judge_notes_formula({"n": 239, "disagree": 17}, "run", "shape (2, 1), stride (1, 2)")
    assert f.verdict is Verdict.FAILS and "size-1" in f.evidence
    assert layout.judge_notes_formula({"n": 239, "disagree": 0}, "run", "").verdict is Verdict.HOLDS
    assert layout.judge_notes_formula({"n": 0, "disagree": 0}, "run", "").verdict is Verdict.FAILS


def test_layout_permute_strides():
    assert layout.judge_permute_strides({"n": 300, "wrong": 0}, "run").verdict is Verdict.HOLDS
    # A permute that copied, or moved the strides wrongly, once: fails.
    assert layout.judge_permute_strides({"n": 300, "wrong": 1}, "run").verdict is Verdict.FAILS
    assert layout.judge_permute_strides({"n": 0, "wrong": 0}, "run").verdict is Verdict.FAILS


def test_layout_stride_prose_fails_on_row_major_strides():
    observed = [((3, 4), (4, 1), (1, 4)), ((2, 5), (5, 1), (1, 5))]
    f = layout.judge_notes_strides(observed)
    assert f.verdict is Verdict.FAILS and "(1, b)" in f.evidence and f.errata == ()
    # Strides as the notes state them, (a, 1) before and after: holds.
    assert layout.judge_notes_strides([((3, 4), (3, 1), (3, 1))]).verdict is Verdict.HOLDS


def test_layout_snippet_prints_what_the_notes_print():
    assert (
        layout.judge_notes_snippet((True, False, True), (True, False), (True, True)).verdict is Verdict.HOLDS
    )
    # A transpose that copied (b not sharing a's data_ptr), or a contiguous transpose: fails.
    assert layout.judge_notes_snippet((True, False, True), (False, False), (True, True)).verdict is (
        Verdict.FAILS
    )
    assert (
        layout.judge_notes_snippet((True, True, True), (True, False), (True, True)).verdict is Verdict.FAILS
    )
    assert layout.judge_notes_snippet((True, False, True), (True, False), (True, False)).verdict is (
        Verdict.FAILS
    )
    assert layout.judge_notes_snippet((True, False, True), (True, False), (True, True)).errata == ()


def test_layout_view_needs_contiguous_fails_where_a_noncontiguous_view_succeeds():
    counts = {"ok": 265, "raised": 35, "mismatch": 0}
    seen = "arange(12).reshape(3,4).t().view(2,2,3) succeeds"
    f = layout.judge_view_rule(counts, "view size is not compatible", "run", seen)
    assert f.verdict is Verdict.FAILS and seen in f.evidence and f.errata == ()
    assert layout.judge_view_rule(counts, "view size is not compatible", "run").verdict is Verdict.HOLDS
    assert layout.judge_view_rule({**counts, "mismatch": 1}, "x", "run").verdict is Verdict.FAILS
    assert layout.judge_view_rule(counts, "", "run").verdict is Verdict.FAILS  # transposed view did not raise
    assert layout.judge_view_rule({**counts, "raised": 0}, "x", "run").verdict is Verdict.FAILS


def test_layout_reshape_judged_on_similar_and_if():
    counts = {"view": 194, "copy": 35, "view_of_noncontiguous": 13, "mismatch": 0, "contiguous_copied": 0}
    f = layout.judge_reshape_rule(counts, "run")
    assert f.verdict is Verdict.HOLDS and "13 non-contiguous sources" in f.evidence and f.errata == ()
    # A reshape that copied a contiguous source: "利用原有的空间如果原来的数组本来就是连续的" fails.
    assert layout.judge_reshape_rule({**counts, "contiguous_copied": 1}, "run").verdict is Verdict.FAILS
    assert layout.judge_reshape_rule({**counts, "mismatch": 2}, "run").verdict is Verdict.FAILS
    assert layout.judge_reshape_rule({**counts, "copy": 0}, "run").verdict is Verdict.FAILS


def test_layout_contiguous_allocates_only_when_needed():
    seen = {"contiguous": 254, "returned_self": 254, "noncontiguous": 46, "copy_wrong": 0}
    f = layout.judge_contiguous_copies(seen, "run")
    assert f.verdict is Verdict.DEPENDS and "not contiguous already" in f.evidence
    # A contiguous() that always allocated would bear the notes out; one that copied wrongly fails.
    assert layout.judge_contiguous_copies({**seen, "returned_self": 0}, "run").verdict is Verdict.HOLDS
    assert layout.judge_contiguous_copies({**seen, "copy_wrong": 1}, "run").verdict is Verdict.FAILS
    assert layout.judge_contiguous_copies({**seen, "noncontiguous": 0}, "run").verdict is Verdict.FAILS


def test_layout_view_and_permute_noncontiguous_fails_on_contiguous_views():
    views = {"views": 300, "noncontiguous_views": 0, "source_changed": 0, "permutes": 115}
    views["noncontiguous_permutes"] = 115
    g = layout.judge_view_keeps_contiguity(views, "run")
    assert g.verdict is Verdict.FAILS and "only permute" in g.evidence and g.errata == ()
    # Views that came out non-contiguous, as the notes say: holds.
    assert layout.judge_view_keeps_contiguity({**views, "noncontiguous_views": 300}, "run").verdict is (
        Verdict.HOLDS
    )
    assert layout.judge_view_keeps_contiguity({**views, "permutes": 0}, "run").verdict is Verdict.FAILS


def test_layout_copies_and_timed_layouts():
    good = {"transposed_contiguous": ((48, 1), True, False, True), "clone": ((48, 1), True, False, True)}
    assert layout.judge_copies_are_row_major(good).verdict is Verdict.HOLDS
    shared = {**good, "transposed_contiguous": ((1, 64), False, True, True)}
    assert layout.judge_copies_are_row_major(shared).verdict is Verdict.FAILS
    assert layout.judge_timed_layouts({"row-major": True, "column-major": True}).verdict is Verdict.HOLDS
    assert layout.judge_timed_layouts({"row-major": True, "column-major": False}).verdict is Verdict.FAILS
