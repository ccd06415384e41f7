"""Re-judged findings of the RNN, distributed, optimizer and im2col cases: each verdict follows
from its observation, each erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import dist, rnn
from cases.conv import im2col, transposed
from cases.optim import param_groups
from cases.parallel import average_gradient
from harness.contract.record import ErratumKind, Verdict


def test_rnn_forward_slips_are_errata_and_the_fixed_loop_decides():
    f = rnn.judge_notes_forward("'NoneType' has no attribute 'data'", True, "mat1 and mat2", "'tuple'")
    assert f.verdict is Verdict.HOLDS
    assert [e.kind for e in f.errata] == [
        ErratumKind.TYPO,
        ErratumKind.WRONG_SHAPE_OR_FORMULA,
        ErratumKind.WRONG_STATEMENT,
    ]
    assert rnn.judge_notes_forward("", True, "", "").errata == ()
    assert rnn.judge_notes_forward("", False, "", "").verdict is Verdict.FAILS


def test_rnn_data_vs_detach_judged_on_the_notes_use_only():
    assert rnn.judge_data_vs_detach(True, 4.6).verdict is Verdict.HOLDS
    assert rnn.judge_data_vs_detach(False, 4.6).verdict is Verdict.FAILS


def test_dist_partition_and_setup_errata():
    assert dist.judge_partition([(12, 4, False, 0, 0, True)]).verdict is Verdict.HOLDS
    assert dist.judge_partition([(10, 4, False, 2, 0, True)]).verdict is Verdict.DEPENDS
    assert dist.judge_partition([(10, 4, False, 2, 0, False)]).verdict is Verdict.FAILS
    warned = dist.judge_launch_deprecated("FutureWarning: 'deprecated'")
    assert warned.verdict is None and warned.errata[0].kind is ErratumKind.DEPRECATED_API
    assert dist.judge_launch_deprecated("").errata == ()


def test_all_reduce_multigpu_is_a_removed_api_erratum_deciding_nothing():
    f = average_gradient.judge_all_reduce_multigpu(False, "AttributeError('no all_reduce_multigpu')")
    assert f.verdict is None and f.errata[0].kind is ErratumKind.REMOVED_API
    assert average_gradient.judge_all_reduce_multigpu(True, "").errata == ()


def test_param_groups_init_slips_are_typos_and_apply_decides():
    f = param_groups.judge_apply_init(True, True, "a leaf Variable", "TypeError", False)
    assert (
        f.verdict is Verdict.HOLDS
        and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT] + [ErratumKind.TYPO] * 2
    )
    assert param_groups.judge_apply_init(True, True, None, None, True).errata == ()
    assert param_groups.judge_apply_init(True, False, None, None, True).verdict is Verdict.FAILS


def test_conv_kernel_statement_is_an_erratum_only_where_the_matrix_is_never_built():
    f = im2col.judge_conv_is_a_matrix_product(False, "peak 4 MiB")
    assert f.verdict is None and f.errata[0].kind is ErratumKind.WRONG_STATEMENT
    assert im2col.judge_conv_is_a_matrix_product(True, "peak 12 MiB").errata == ()


def test_transposed_output_size_001_formula_is_an_erratum():
    f = transposed.judge_transposed_output_size(406, 258, "h=5 k=3 s=2 p=1", 83, 0)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 0).errata == ()
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 5).verdict is Verdict.FAILS
