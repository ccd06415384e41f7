"""The judges of `cases/conv/im2col.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.conv import im2col
from harness.contract.record import Verdict

MIB = 2**20

# ---- conv.im2col --------------------------------------------------------------------------------------


def test_unfold_shape_fails_where_the_notes_number_is_not_the_layers():
    f = im2col.judge_unfold_shape((2, 30, 4), (2, 30, 4), [], 24)
    assert f.verdict is Verdict.HOLDS and f.errata == ()
    g = im2col.judge_unfold_shape((2, 30, 4), (2, 24, 4), [], 24)
    assert g.verdict is Verdict.FAILS and g.errata == ()
    assert im2col.judge_unfold_shape(
        (2, 30, 4), (2, 30, 4), [((2, 3), 1, 0, 1, (1, 18, 56), (1, 18, 42))], 24
    ).verdict is (Verdict.FAILS)


def test_im2col_equality_holds_within_the_bound_and_fails_beyond():
    assert im2col.judge_im2col_equals_conv([("k=3", 0.06, 0.08), ("k=5", 0.01, 3.0)]).verdict is Verdict.HOLDS
    assert im2col.judge_im2col_equals_conv([("k=3", 0.06, 0.08), ("k=5", 1.5, 0.03)]).verdict is Verdict.FAILS


def test_sparse_matrix_statement_fails_where_the_kernel_never_holds_the_matrix():
    direct = im2col.judge_conv_is_a_matrix_product(4 * MIB, 72 * MIB, 9 * MIB, "peak 4 MiB")
    assert direct.verdict is Verdict.FAILS and "direct or implicit-GEMM" in direct.evidence
    gemm = im2col.judge_conv_is_a_matrix_product(12 * MIB, 72 * MIB, 9 * MIB, "peak 12 MiB")
    assert gemm.verdict is Verdict.FAILS and "dense im2col" in gemm.evidence
    # A kernel that did build the sparse matrix (what the notes describe) would peak above it.
    built = im2col.judge_conv_is_a_matrix_product(80 * MIB, 72 * MIB, 9 * MIB, "peak 80 MiB")
    assert built.verdict is Verdict.HOLDS and built.errata == ()
