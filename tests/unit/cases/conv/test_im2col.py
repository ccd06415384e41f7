"""The judges of `cases/conv/im2col.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.conv import im2col
from harness.contract.record import ErratumKind, Verdict

# ---- conv.im2col --------------------------------------------------------------------------------------


def test_unfold_shape_is_computed_and_a_wrong_notes_number_would_be_an_erratum():
    f = im2col.judge_unfold_shape((2, 30, 4), (2, 30, 4), [], 24)
    assert f.verdict is Verdict.HOLDS and f.errata == ()
    g = im2col.judge_unfold_shape((2, 30, 4), (2, 24, 4), [], 24)
    assert [e.kind for e in g.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert im2col.judge_unfold_shape(
        (2, 30, 4), (2, 30, 4), [((2, 3), 1, 0, 1, (1, 18, 56), (1, 18, 42))], 24
    ).verdict is (Verdict.FAILS)


def test_im2col_equality_holds_within_the_bound_and_fails_beyond():
    assert im2col.judge_im2col_equals_conv([("k=3", 0.06, 0.08), ("k=5", 0.01, 3.0)]).verdict is Verdict.HOLDS
    assert im2col.judge_im2col_equals_conv([("k=3", 0.06, 0.08), ("k=5", 1.5, 0.03)]).verdict is Verdict.FAILS


def test_library_kernel_statement_is_an_erratum_only_where_the_matrix_is_never_built():
    f = im2col.judge_conv_is_a_matrix_product(False, "peak 4 MiB")
    assert f.verdict is None and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert im2col.judge_conv_is_a_matrix_product(True, "peak 12 MiB").errata == ()


def test_conv_kernel_statement_is_an_erratum_only_where_the_matrix_is_never_built():
    f = im2col.judge_conv_is_a_matrix_product(False, "peak 4 MiB")
    assert f.verdict is None and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert im2col.judge_conv_is_a_matrix_product(True, "peak 12 MiB").errata == ()
