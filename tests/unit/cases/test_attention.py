"""The judges of `cases/attention.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import pytest

from cases import attention
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


def test_attention_snippet_syntax_error_is_a_typo_and_the_shapes_decide():
    f = attention.judge_notes_snippet("invalid syntax (line 5)", (30, 8, 10, 64), (30, 8, 10, 11))
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.TYPO
    assert not attention.judge_notes_snippet("", (30, 8, 10, 64), (30, 8, 10, 11)).errata
    assert attention.judge_notes_snippet("", (30, 8, 10, 11), (30, 8, 10, 11)).verdict is Verdict.FAILS


def test_attention_sdpa_backend_is_context_and_says_a_refusal():
    assert attention.judge_sdpa_backend(True, "k").verdict is None
    assert "REFUSED" in attention.judge_sdpa_backend(False, "k").evidence
    assert "REFUSED" not in attention.judge_sdpa_backend(True, "k").evidence
