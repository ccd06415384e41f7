"""Judges of attention, onehot, broadcast, layernorm, clip, loss, sparse and rnn (issue 36): each
fed the observation the suite makes (holds) and a contrary one (fails or depends), errata apart."""

from __future__ import annotations

import pytest

from cases import attention, broadcast, clip, layernorm, loss, onehot, rnn, sparse
from harness.contract.gain import Ratio
from harness.contract.record import ErratumKind, Verdict

DTYPES = ["torch.float32", "torch.bfloat16", "torch.float16"]


SEQ = {"dtype": "torch.bool", "shape": (1, 12, 12), "equals_torch_triu": True, "lower_triangular": True}


def test_attention_masks_and_the_uint8_statement():
    assert attention.judge_masks(SEQ, True, True, "d").verdict is Verdict.HOLDS
    assert attention.judge_masks(SEQ, True, True, "d").errata == ()
    assert attention.judge_masks(SEQ, False, True, "d").verdict is Verdict.FAILS
    took = attention.judge_masks(SEQ, True, False, "d")
    assert took.verdict is Verdict.HOLDS and took.errata[0].kind is ErratumKind.WRONG_STATEMENT


@pytest.mark.parametrize(
    "contrary",
    [
        {"dtype": "torch.uint8"},
        {"shape": (12, 12)},
        {"equals_torch_triu": False},
        {"lower_triangular": False},
    ],
    ids=["uint8", "no_batch_axis", "not_triu", "upper"],
)
def test_attention_subsequent_mask_as_observed_decides(contrary):
    f = attention.judge_masks({**SEQ, **contrary}, True, True, "d")
    assert f.verdict is Verdict.FAILS


def _fill(dtype, raised="", weight=0.0, excess=-1e-6):
    if raised:
        return {"dtype": dtype, "raised": raised}
    return {
        "dtype": dtype,
        "raised": "",
        "masked_weight_max": weight,
        "masked_row_excess": excess,
        "sdpa_row": "0",
    }


def test_attention_fill_value_in_fp16_is_an_erratum_not_a_condition():
    seen = [_fill(DTYPES[0]), _fill(DTYPES[1]), _fill(DTYPES[2], raised="overflow")]
    f = attention.judge_masked_weights(seen, DTYPES)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert not attention.judge_masked_weights([_fill(d) for d in DTYPES], DTYPES).errata
    assert attention.judge_masked_weights([_fill(d) for d in DTYPES], DTYPES[:2]).verdict is Verdict.FAILS
    every = [_fill(d, raised="overflow") for d in DTYPES]
    assert attention.judge_masked_weights(every, DTYPES).verdict is Verdict.FAILS


def test_attention_masked_weight_and_masked_row_as_observed_decide():
    weight = [_fill(DTYPES[0], weight=1e-3), _fill(DTYPES[1])]
    f = attention.judge_masked_weights(weight, DTYPES[:2])
    assert f.verdict is Verdict.FAILS and "NOT 0" in f.evidence
    row = [_fill(DTYPES[0]), _fill(DTYPES[1], excess=1e-3)]
    f = attention.judge_masked_weights(row, DTYPES[:2])
    assert f.verdict is Verdict.FAILS and "NOT the mean of V" in f.evidence


def test_onehot_names_judged_on_the_observed_shapes_and_dtype():
    seen = ((6, 4), "torch.int64", (2, 3, 5))
    f = onehot.judge_notes_names(*seen, ["torch.functional.one_hot"], "2.13.0")
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert onehot.judge_notes_names((6, 3), "torch.int64", (2, 3, 5), [], "2").verdict is Verdict.FAILS
    assert onehot.judge_notes_names((6, 4), "torch.float32", (2, 3, 5), [], "2").verdict is Verdict.FAILS
    assert onehot.judge_notes_names((6, 4), "torch.int64", (6, 5), [], "2").verdict is Verdict.FAILS


def test_attention_snippet_syntax_error_is_a_typo_and_the_shapes_decide():
    f = attention.judge_notes_snippet("invalid syntax (line 5)", (30, 8, 10, 64), (30, 8, 10, 11))
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert not attention.judge_notes_snippet("", (30, 8, 10, 64), (30, 8, 10, 11)).errata
    assert attention.judge_notes_snippet("", (30, 8, 10, 11), (30, 8, 10, 11)).verdict is Verdict.FAILS


def test_onehot_scatter_formula_follows_the_examples():
    assert onehot.judge_scatter_formula(150, [], [0, 1, 2], "run").verdict is Verdict.HOLDS
    assert (
        onehot.judge_scatter_formula(150, [((2, 2, 2), 0, (1, 1, 1))], [0, 1, 2], "r").verdict
        is Verdict.FAILS
    )
    assert onehot.judge_scatter_formula(150, [], [0, 1], "run").verdict is Verdict.FAILS
    assert onehot.judge_scatter_formula(0, [], [], "run").verdict is Verdict.FAILS


def test_broadcast_notes_array_shapes_are_errata():
    wrong = [("b.shape is (1,6)", (1, 6), (1, 5))]
    f = broadcast.judge_notes_examples(True, (5, 5, 3), True, wrong)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert "(1, 5)" in f.errata[0].evidence
    assert broadcast.judge_notes_examples(False, (5, 5, 3), True, wrong).verdict is Verdict.FAILS


def test_layernorm_indentation_slip_is_a_typo():
    f = layernorm.judge_notes_snippet("IndentationError: unindent (line 6)", True)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert not layernorm.judge_notes_snippet("", True).errata
    assert layernorm.judge_notes_snippet("", False).verdict is Verdict.FAILS


def test_clip_judges():
    ok = {"notes": (0.0, 1e-8, 1.0), "torch": (0.0, 1e-8, 1.0)}
    assert clip.judge_inf_norm(ok, 1.05, 4.2).verdict is Verdict.HOLDS
    assert clip.judge_inf_norm({**ok, "notes": (1e-3, 1e-8, 1.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    assert clip.judge_inf_norm({**ok, "torch": (0.0, 1e-8, 2.0)}, 1.05, 4.2).verdict is Verdict.FAILS
    assert clip.judge_returned_norm(1e-8, 1e-6, "float", "Tensor").verdict is Verdict.HOLDS
    assert clip.judge_returned_norm(1e-3, 1e-6, "float", "Tensor").verdict is Verdict.FAILS
    f = clip.judge_notes_snippet("name 'inf' is not defined", "torch._six is gone", True)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert "torch._six" in f.errata[0].evidence
    assert not clip.judge_notes_snippet("", "", True).errata
    assert clip.judge_notes_snippet("x", "y", False).verdict is Verdict.FAILS
    fast, same = Ratio(4.0, 3.8, 4.2, 12), Ratio(1.0, 0.98, 1.02, 12)
    assert clip.judge_foreach_scaling([(4, same), (1024, fast)], None, "w").verdict is Verdict.HOLDS
    assert clip.judge_foreach_scaling([(4, fast), (1024, same)], None, "w").verdict is Verdict.FAILS
    assert clip.judge_foreach_scaling([(4, fast), (1024, fast)], "busy", "w").verdict is Verdict.DEPENDS


def test_clip_speed_is_context_and_correctness_decides():
    from cases import get_case

    case = get_case("clip.grad_norm")
    assert case.checks["loop_vs_foreach_scaling"].claim is None and not case.verdict.claim
    assert {c.id for c in case.claims} == {"total_norm", "inf_norm", "returns_total_norm"}


def test_loss_judges():
    assert loss.judge_label_smoothing(0.0, 1e-15, 0.015, 5.1).verdict is Verdict.HOLDS
    assert loss.judge_label_smoothing(1e-3, 1e-15, 0.015, 5.1).verdict is Verdict.FAILS
    assert loss.judge_label_smoothing(0.0, 0.0, 0.0, 5.1).verdict is Verdict.FAILS  # changed nothing
    assert loss.judge_ignore_index(1e-15, 0, 5.49, 4.12, 48, 64).verdict is Verdict.HOLDS
    assert loss.judge_ignore_index(1e-15, 3, 5.49, 4.12, 48, 64).verdict is Verdict.FAILS
    assert loss.judge_ignore_index(1e-15, 0, 5.49, 5.49, 48, 64).verdict is Verdict.FAILS  # ÷N
    assert loss.judge_weighted(0.0, 0.0, 5.18, 8.09).verdict is Verdict.HOLDS
    assert loss.judge_weighted(1e-2, 0.0, 5.18, 8.09).verdict is Verdict.FAILS
    assert loss.judge_k_dim((4, 6, 7), 1e-16, 0.0).verdict is Verdict.HOLDS
    assert loss.judge_k_dim((4, 5, 6, 7), 1e-16, 0.0).verdict is Verdict.FAILS
    assert loss.judge_k_dim((4, 6, 7), 1e-3, 0.0).verdict is Verdict.FAILS
    assert loss.judge_indices_faster(Ratio(1.4, 1.34, 1.46, 12), None, "w").verdict is Verdict.HOLDS
    assert loss.judge_indices_faster(Ratio(1.0, 0.98, 1.03, 12), None, "w").verdict is Verdict.FAILS
    assert loss.judge_indices_faster(Ratio(1.4, 1.34, 1.46, 12), "busy", "w").verdict is Verdict.DEPENDS


def test_sparse_coo_layout_follows_the_observed_layout():
    assert sparse.judge_coo_layout(310, "int64", (2, 310), (310,), True, 2).verdict is Verdict.HOLDS
    assert sparse.judge_coo_layout(310, "int32", (2, 310), (310,), True, 2).verdict is Verdict.FAILS
    assert sparse.judge_coo_layout(310, "int64", (310, 2), (310,), True, 2).verdict is Verdict.FAILS
    assert (
        sparse.judge_coo_layout(310, "int64", (2, 310), (310,), True, 1).verdict is Verdict.FAILS
    )  # 0 dropped


def test_sparse_where_it_turns_over_sizes_and_densities():
    def at(n, mem, time):
        return (n, mem, mem, time, time, time, "t")

    only_large = [at(256, 0.2, 0.0), at(1024, 0.2, 0.03)]
    # bytes pay at both sizes (20 bytes per nnz whatever n): the size is not what turns it.
    f = sparse.judge_where_it_turns(only_large, "cpu")
    assert f.verdict is Verdict.DEPENDS and "n=256" in f.evidence and "0.2" in f.evidence
    held = sparse.judge_where_it_turns([at(256, 0.0, 0.0), at(1024, 0.2, 0.03)], "cpu")
    assert held.verdict is Verdict.HOLDS and "n=1024" in held.evidence
    assert (
        sparse.judge_where_it_turns([at(256, None, 0.0), at(1024, 0.2, 0.03)], "cpu").verdict is Verdict.FAILS
    )
    assert (
        sparse.judge_where_it_turns([at(256, 0.0, 0.0), at(1024, 0.0, 0.0)], "cpu").verdict is Verdict.FAILS
    )
    busy = sparse.judge_where_it_turns(
        [at(256, 0.0, 0.0), at(1024, 0.2, 0.03)], "cpu", busy="machine busy (x)"
    )
    assert busy.verdict is Verdict.DEPENDS and "machine busy (x)" in busy.evidence


def test_rnn_lstm_without_commas_is_a_typo():
    f = rnn.judge_notes_forward("", True, "", "", "invalid syntax (line 3)")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert rnn.judge_notes_forward("", False, "", "", "invalid syntax").verdict is Verdict.FAILS


def test_timings_the_notes_do_not_claim_decide_nothing():
    from cases import get_case
    from harness.contract import rules

    for case_id in ("rnn.timestep_loop", "rnn.hidden_detach", "clip.grad_norm"):
        case = get_case(case_id)
        assert not [r for r in rules.claimed(case.verdict) if isinstance(r, (rules.Faster, rules.Lighter))]
    claimed = {r.claim for r in rules.claimed(get_case("loss.cross_entropy").verdict)}
    assert claimed == {"indices_faster"}


def test_attention_sdpa_backend_is_context_and_says_a_refusal():
    assert attention.judge_sdpa_backend(True, "k").verdict is None
    assert "REFUSED" in attention.judge_sdpa_backend(False, "k").evidence
    assert "REFUSED" not in attention.judge_sdpa_backend(True, "k").evidence


def test_cancellation_context_says_when_the_expansion_left_fp32():
    from cases import distance

    seen = {
        "name": "near-duplicate",
        "expansion_err": 1e-4,
        "broadcast_err": 1e-7,
        "rel": True,
        "truth_min": 1e-3,
        "negative": 3,
        "nan_after_sqrt": 3,
        "nan_after_clamp": 0,
    }
    inside = distance.judge_cancellation([{**seen, "within_fp32_bound": True}], 512)
    past = distance.judge_cancellation([{**seen, "within_fp32_bound": False}], 512)
    assert inside.verdict is None and "PAST" not in inside.evidence and "3/512" in inside.evidence
    assert "PAST the fp32 bound" in past.evidence
