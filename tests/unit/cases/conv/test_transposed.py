"""The judges of `cases/conv/transposed.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.conv import transposed
from harness.contract.record import ErratumKind, Verdict

# ---- conv --------------------------------------------------------------------------------------


def test_transposed_output_size_fails_where_the_layer_leaves_the_formula():
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 0, layer_off=0).verdict is Verdict.HOLDS
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 0, layer_off=3).verdict is Verdict.FAILS


def test_padded_size_is_judged_from_the_sizes_observed():
    assert transposed.judge_padded_size(91, []).verdict is Verdict.HOLDS
    off = transposed.judge_padded_size(91, [(3, 3, 2, 1, 9, 8, 7, 7)])
    assert off.verdict is Verdict.FAILS and "off in 1 of 91" in off.evidence
    assert transposed.judge_padded_size(0, []).verdict is Verdict.FAILS  # nothing checked


def test_notes_layer_name_is_a_typo_only_where_torch_lacks_it():
    params = ["in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"]
    notes = ["channel_in", "channel_out", "kernel_size", "stride", "padding", "bias"]
    f = transposed.judge_notes_layer_name(False, params, notes)
    assert f.verdict is None
    assert [e.kind for e in f.errata] == [ErratumKind.TYPO, ErratumKind.WRONG_STATEMENT]
    assert transposed.judge_notes_layer_name(True, [*params[:5], "bias"], notes).errata == ()


def test_transposed_output_size_001_formula_is_an_erratum():
    f = transposed.judge_transposed_output_size(406, 258, "h=5 k=3 s=2 p=1", 83, 0)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 0).errata == ()
    assert transposed.judge_transposed_output_size(406, 0, None, 83, 5).verdict is Verdict.FAILS
