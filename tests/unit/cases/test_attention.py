"""The judges of `cases/attention.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import pytest

from cases import attention
from harness.contract.record import Verdict

DTYPES = ["torch.float32", "torch.bfloat16", "torch.float16"]


SEQ = {"dtype": "torch.bool", "shape": (1, 12, 12), "equals_torch_triu": True, "lower_triangular": True}


def test_attention_masks_decided_by_the_combined_mask():
    assert attention.judge_masks(SEQ, True, "d").verdict is Verdict.HOLDS
    assert attention.judge_masks(SEQ, True, "d").errata == ()
    # An OR of the two masks (or a wrong diagonal) differs from the loop.
    assert attention.judge_masks(SEQ, False, "d").verdict is Verdict.FAILS


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
    f = attention.judge_masks({**SEQ, **contrary}, True, "d")
    assert f.verdict is Verdict.FAILS


def test_attention_mask_rules_fail_where_masked_fill_takes_what_the_notes_forbid():
    refused = "masked_fill_ only supports boolean masks"
    assert attention.judge_mask_rules(refused, "size mismatch", "").verdict is Verdict.HOLDS
    # A torch that takes a uint8 mask (as torch 1.x did, with a warning): the bool rule is false.
    took = attention.judge_mask_rules("", "size mismatch", "")
    assert took.verdict is Verdict.FAILS and "uint8" in took.evidence and took.errata == ()
    assert attention.judge_mask_rules(refused, "", "").verdict is Verdict.FAILS
    assert attention.judge_mask_rules(refused, "size mismatch", "refused").verdict is Verdict.FAILS


def _fill(dtype, raised="", weight=0.0, full_row=0.0):
    if raised:
        return {"dtype": dtype, "raised": raised}
    return {
        "dtype": dtype,
        "raised": "",
        "masked_weight_max": weight,
        "full_row_weight_max": full_row,
        "sdpa_row": "0",
    }


def test_attention_fill_value_that_fp16_cannot_hold_is_a_condition_not_an_erratum():
    seen = [_fill(DTYPES[0]), _fill(DTYPES[1]), _fill(DTYPES[2], raised="overflow")]
    f = attention.judge_masked_weights(seen, DTYPES)
    assert f.verdict is Verdict.DEPENDS and f.errata == () and "float16" in f.evidence
    assert attention.judge_masked_weights([_fill(d) for d in DTYPES], DTYPES).verdict is Verdict.HOLDS
    every = [_fill(d, raised="overflow") for d in DTYPES]
    assert attention.judge_masked_weights(every, DTYPES).verdict is Verdict.FAILS


def test_attention_masked_weights_as_observed_decide():
    # A fill too small to underflow (e.g. -10): masked keys keep weight where others are allowed.
    leaked = [_fill(DTYPES[0], weight=1e-3), _fill(DTYPES[1])]
    f = attention.judge_masked_weights(leaked, DTYPES[:2])
    assert f.verdict is Verdict.FAILS and "NOT ~0" in f.evidence
    # A fully masked row: softmax over equal fills gives 1/S to each masked key.
    full = [_fill(DTYPES[0], full_row=0.25), _fill(DTYPES[1], full_row=0.25)]
    f = attention.judge_masked_weights(full, DTYPES[:2])
    assert f.verdict is Verdict.DEPENDS and "every key masked" in f.evidence


def test_attention_snippet_shapes_decide():
    assert attention.judge_notes_snippet((30, 8, 10, 64), (30, 8, 10, 11)).verdict is Verdict.HOLDS
    assert attention.judge_notes_snippet((30, 8, 10, 64), (30, 8, 10, 11)).errata == ()
    # The key length in the output (matmul with p_attn's transpose) is not the query's shape.
    assert attention.judge_notes_snippet((30, 8, 10, 11), (30, 8, 10, 11)).verdict is Verdict.FAILS
    assert attention.judge_notes_snippet((30, 8, 10, 64), (30, 8, 11, 10)).verdict is Verdict.FAILS


def test_attention_sdpa_backend_is_context_and_says_a_refusal():
    assert attention.judge_sdpa_backend(True, "k").verdict is None
    assert "REFUSED" in attention.judge_sdpa_backend(False, "k").evidence
    assert "REFUSED" not in attention.judge_sdpa_backend(True, "k").evidence
