"""The judges of `cases/conv/transposed.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import torch

from cases.conv import transposed
from harness.contract.record import ErratumKind, Verdict

# ---- conv --------------------------------------------------------------------------------------


def test_transposed_output_size_fails_where_the_layer_leaves_the_formula():
    assert transposed.judge_transposed_output_size(406, 83, 0, layer_off=0).verdict is Verdict.HOLDS
    assert transposed.judge_transposed_output_size(406, 83, 0, layer_off=3).verdict is Verdict.FAILS
    # A formula off by p (001's, applied where 004 speaks) is what a wrong 004 would show.
    assert transposed.judge_transposed_output_size(406, 83, 50).verdict is Verdict.FAILS
    assert transposed.judge_transposed_output_size(0, 0, 0).verdict is Verdict.FAILS  # nothing checked


def test_001_output_size_fails_where_padding_stands_for_output_padding():
    wrong = [(5, 3, 2, 1, 0, 1, 9, 10)]
    f = transposed.judge_001_output_size(406, wrong, 0)
    assert f.verdict is Verdict.FAILS and "layer gives 9, the notes' formula 10" in f.evidence
    assert "off in 0 of 406" in f.evidence  # the corrected form's count
    assert transposed.judge_001_output_size(406, [], 0).verdict is Verdict.HOLDS
    assert transposed.judge_001_output_size(0, [], 0).verdict is Verdict.FAILS


def test_001_formula_observed_on_the_layer_fails():
    f = transposed.check_001_output_size(torch.device("cpu"))
    assert f.verdict is Verdict.FAILS and f.errata == ()


def test_padded_size_is_judged_from_the_sizes_observed():
    assert transposed.judge_padded_size(91, []).verdict is Verdict.HOLDS
    off = transposed.judge_padded_size(91, [(3, 3, 2, 1, 9, 8, 7, 7)])
    assert off.verdict is Verdict.FAILS and "off in 1 of 91" in off.evidence
    assert transposed.judge_padded_size(0, []).verdict is Verdict.FAILS  # nothing checked


def test_notes_layer_name_is_a_typo_only_where_torch_lacks_it():
    f = transposed.judge_notes_layer_name(False)
    assert f.verdict is None and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert transposed.judge_notes_layer_name(True).errata == ()


def test_layer_signature_fails_where_the_sixth_argument_is_not_bias():
    params = ["in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"]
    f = transposed.judge_layer_signature(params, True, (0, 0))
    assert f.verdict is Verdict.FAILS and "still has a bias" in f.evidence
    assert transposed.judge_layer_signature([*params[:5], "bias"], False, (0, 0)).verdict is Verdict.HOLDS
