"""Masked attention: `masked_fill(-1e9)` + softmax + matmul vs `F.scaled_dot_product_attention`
(notes 004 "NLP中的两种mask").

A decoder needs two masks at once: the padding mask (key j is a real token: j < length[b]) and the
sequence ("subsequent") mask (j ≤ i). The notes build the second with `np.triu(ones, k=1) == 0` and
combine the two with `&`; True means "may attend", and both the notes' `attention` and SDPA read a
boolean mask that way.

The notes' form materialises the (B, H, S, S) scores three times (matmul, masked_fill, softmax),
so its memory grows as S²; SDPA's fused kernels (flash / memory-efficient on CUDA, a flash-style
kernel on CPU) stream over key blocks and never hold the score matrix. Which kernel SDPA picks
depends on device, dtype and mask: the case records the one that ran.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import torch
import torch.nn.functional as F

from cases._lib.inputs import generator
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    library,
    naive,
)
from harness import measure
from harness.contract.rules import FromFindings
from notes import parse

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16
# 004's snippets: the sequence mask (`def subsequent_mask(size):`) and the attention function
# (`# tensor.masked_fill(mask,value)` ... `def attention(query, key, value, mask=None, dropout=None):`).
NOTES_SUBSEQUENT_MASK, NOTES_ATTENTION = "004#10", "004#11"


def notes_code(locator: str, repairs: tuple = ()) -> dict:
    """The notes' snippet at `locator`, read from the notes package and executed (with `repairs`,
    (pattern, replacement) regexes for slips the notes' snippets check records): the names it
    defines."""
    code = parse.snippet_text(locator)
    for pattern, replacement in repairs:
        code = re.sub(pattern, replacement, code)
    scope = {"np": np, "torch": torch, "math": math, "F": F}
    exec(code, scope)  # noqa: S102 - the notes' own text
    return scope


def subsequent_mask(size):
    """The notes' sequence mask, run from the note file: (1, size, size) bool, True on and below
    the diagonal."""
    return notes_code(NOTES_SUBSEQUENT_MASK)["subsequent_mask"](size)


def combined_mask(lengths, size, device):
    """Padding mask (B, 1, S) & sequence mask (1, S, S) → (B, S, S), plus a head axis → (B, 1, S, S).
    torch.triu on the device stands in for the notes' np.triu (equal: see `check_masks`), because
    np.ones((1, S, S)) is float64 on the host: 8 GiB at S = 32768."""
    padding = torch.arange(size, device=device)[None, :] < lengths[:, None]  # (B, S)
    sequence = torch.triu(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=1) == 0
    return (padding.unsqueeze(-2) & sequence.unsqueeze(0)).unsqueeze(1)


def make_attention(size, dtype, device, seed):
    g = generator(device, seed)
    b, h, s, d = size["b"], size["h"], size["s"], size["d"]
    q, k, v = (torch.randn((b, h, s, d), generator=g, device=device).to(dtype) for _ in range(3))
    # Lengths in [S/2, S], the first sequence unpadded, so both masks bite in every batch.
    lengths = torch.randint(s // 2, s + 1, (b,), generator=g, device=device)
    lengths[0] = s
    return q, k, v, combined_mask(lengths, s, device), lengths


def masked_fill_attention(q, k, v, mask, lengths):
    """The notes' `attention` (without dropout). Writes B·H·S² scores three times — matmul output,
    masked_fill copy, softmax output — and reads them back: O(S²) memory and traffic per head."""
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, v)


def sdpa(q, k, v, mask, lengths):
    # Fused: scores live in on-chip tiles (CUDA) or per-block buffers (CPU), O(S·D) extra memory;
    # the boolean mask is read (B·S² bytes) but no B·H·S² tensor is written.
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def sdpa_math(q, k, v, mask, lengths):
    # The same API forced onto its unfused reference kernel: it materialises the B·H·S² scores like
    # the notes' form, so the memory difference is the kernel's, not the API's.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def attention_float64(q, k, v, mask, lengths):
    """The truth, from the lengths (not the mask tensor): softmax over exactly the keys with
    j ≤ i and j < length[b], in float64, a block of query rows at a time to bound memory."""
    b, h, s, d = q.shape
    q64, k64, v64 = q.double(), k.double(), v.double()
    j = torch.arange(s, device=q.device)
    rows = max(1, 2**25 // (b * h * s))
    out = []
    for i0 in range(0, s, rows):
        i = torch.arange(i0, min(s, i0 + rows), device=q.device)
        scores = q64[:, :, i] @ k64.transpose(-2, -1) / math.sqrt(d)
        allowed = (j[None, None, :] <= i[None, :, None]) & (j[None, None, :] < lengths[:, None, None])
        scores = scores.masked_fill(~allowed[:, None], float("-inf"))
        out.append(torch.softmax(scores, -1) @ v64)
    return torch.cat(out, dim=2)


# ---- which SDPA kernel ran ----------------------------------------------------------------------

_KERNELS = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cuDNN",
    "aten::_scaled_dot_product_attention_math": "math",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable",
}


def sdpa_kernel_that_ran(fn) -> str:
    """The SDPA kernel dispatched while `fn` runs, read from the profiler's aten op names (the
    dispatcher's choice is not exposed otherwise; this works on every device)."""
    from torch.profiler import ProfilerActivity

    with measure.profiled(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    ran = sorted({_KERNELS[e.name] for e in prof.events() if e.name in _KERNELS})
    return "+".join(ran) or "none recorded"


def _backends():
    """{name: SDPBackend} for the backends this torch can force, or {} without the API."""
    try:
        from torch.nn.attention import SDPBackend
    except ImportError:
        return {}
    names = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")
    return {n.lower(): getattr(SDPBackend, n) for n in names if hasattr(SDPBackend, n)}


def _forced(backend, fn):
    from torch.nn.attention import sdpa_kernel

    try:
        with sdpa_kernel(backend):
            fn()
        return "ok"
    except RuntimeError:  # "No available kernel": this backend cannot take these inputs
        return "unavailable"


def check_sdpa_backend(device):
    """Per dtype: the kernel SDPA picks for a combined boolean mask (and without a mask, causal),
    and which backends accept the masked call when forced with `sdpa_kernel`."""
    size = {"b": 2, "h": 4, "s": 256, "d": 64}
    dtypes = (FP32, BF16, FP16) if device.type == "cuda" else (FP32, BF16)
    lines, math_ok = [], []
    for dtype in dtypes:
        inputs = make_attention(size, dtype, device, seed=1)
        q, k, v = inputs[:3]
        masked = sdpa_kernel_that_ran(functools.partial(sdpa, *inputs))
        causal = sdpa_kernel_that_ran(
            functools.partial(F.scaled_dot_product_attention, q, k, v, is_causal=True)
        )
        forced = {n: _forced(b, functools.partial(sdpa, *inputs)) for n, b in _backends().items()}
        accepts = ", ".join(n for n, r in forced.items() if r == "ok") or "none"
        lines.append(
            f"{dtype}: bool mask → {masked}; is_causal → {causal}; accept the mask when forced: {accepts}"
        )
        math_ok.append(forced.get("math", "ok") == "ok")
    return judge_sdpa_backend(
        all(math_ok), f"torch {torch.__version__} on {device.type}: " + "; ".join(lines)
    )


def judge_sdpa_backend(math_accepts_every_input: bool, kernels: str) -> Finding:
    """Which SDPA kernel ran, reported as context for the timings (SDPA is the catalogue's better
    way, never the notes' claim): no verdict. The math backend refusing an input is said plainly."""
    return Finding(
        None,
        kernels + ("" if math_accepts_every_input else "; the math backend REFUSED a masked input"),
    )


def sdpa_metrics(variant, inputs, device):
    """extra_info: which SDPA kernel produced this point's timings (a string, not a number)."""
    if not variant.startswith("sdpa"):
        return {}
    return {"sdpa_kernel": sdpa_kernel_that_ran(functools.partial(ATTENTION.variants[variant].fn, *inputs))}


# ---- the notes' masks and fill value ------------------------------------------------------------


def check_masks(device):
    """The notes' `subsequent_mask` (run from the note file) against torch.triu on the device, and
    padding & sequence combined by broadcasting against a per-element loop over (b, i, j):
    allowed iff j ≤ i and j < length."""
    s, lengths = 12, [12, 7, 1]
    notes = subsequent_mask(s).to(device)
    square = notes[0] if notes.dim() == 3 else notes
    sequence = {
        "dtype": str(notes.dtype),
        "shape": tuple(notes.shape),
        "equals_torch_triu": notes.shape == (1, s, s)
        and bool(torch.equal(notes[0], torch.triu(torch.ones(s, s, device=device), diagonal=1) == 0)),
        "lower_triangular": square.shape == (s, s)
        and bool(torch.equal(square, torch.ones(s, s, dtype=notes.dtype, device=device).tril())),
    }
    got = combined_mask(torch.tensor(lengths, device=device), s, device)
    padding = torch.arange(s, device=device)[None, :] < torch.tensor(lengths, device=device)[:, None]
    notes_combined = padding.unsqueeze(-2) & notes  # the notes' two masks, their shapes as written
    loop = torch.tensor(
        [[[j <= i and j < n for j in range(s)] for i in range(s)] for n in lengths], device=device
    )
    assert got.shape == (3, 1, s, s), got.shape  # the suite's own mask builder, shaped right
    assert torch.equal(got[:, 0], loop), "the device-built combined mask differs from the loop"
    return judge_masks(
        sequence,
        bool(notes_combined.shape == loop.shape and torch.equal(notes_combined, loop)),
        f"on {device.type}, S = {s}: (B,1,S) padding & (1,S,S) sequence broadcasts to (B,S,S), "
        f"lengths {lengths}",
        size=s,
    )


def judge_masks(sequence: dict, combined_equals_loop: bool, detail: str, size: int = 12) -> Finding:
    """The notes' masks: `subsequent_mask` (`sequence`: its dtype, shape, whether it equals
    torch.triu(ones, 1) == 0 and whether it is lower-triangular, as observed) is a (1, S, S) bool
    mask True on and below the diagonal ("True为不需要mask的部分"), and padding & sequence combined by
    broadcasting allows exactly j ≤ i and j < length (a loop)."""
    wrong = []
    if sequence["dtype"] != str(torch.bool):
        wrong.append(f"dtype {sequence['dtype']}, not torch.bool")
    if tuple(sequence["shape"]) != (1, size, size):
        wrong.append(f"shape {tuple(sequence['shape'])}, not (1, {size}, {size})")
    if not sequence["equals_torch_triu"]:
        wrong.append("differs from torch.triu(ones, 1) == 0")
    if not sequence["lower_triangular"]:
        wrong.append("is NOT True exactly on and below the diagonal")
    holds = not wrong and combined_equals_loop
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{detail}: subsequent_mask "
        + (
            "; ".join(wrong)
            if wrong
            else "is (1,S,S) bool, equal to torch.triu(ones,1)==0, True on and below the diagonal"
        )
        + f"; padding & subsequent_mask {'equals' if combined_equals_loop else 'DIFFERS FROM'} the "
        "(b,i,j) loop",
    )


def check_mask_rules(device):
    """The notes' two rules for masked_fill's mask, tried: a uint8 mask (the notes' own np.triu
    matrix before `== 0`), a bool mask that cannot broadcast with the tensor, and one that can."""
    s = 6
    scores = torch.zeros(1, s, s, device=device)

    def outcome(mask):
        try:
            scores.masked_fill(mask.to(device), 1.0)
            return ""
        except RuntimeError as exc:
            return str(exc).splitlines()[0]

    uint8 = torch.from_numpy(np.triu(np.ones((1, s, s)), k=1).astype("uint8"))
    return judge_mask_rules(
        uint8=outcome(uint8),
        not_broadcastable=outcome(torch.ones(s + 1, dtype=torch.bool)),
        broadcastable=outcome(torch.ones(s, dtype=torch.bool)),
    )


def judge_mask_rules(uint8: str, not_broadcastable: str, broadcastable: str) -> Finding:
    """The notes: masked_fill's mask must broadcast with the tensor and must be boolean. Each
    argument is masked_fill's error for that mask ("" where it was accepted): the rules hold when
    the uint8 and the non-broadcastable masks are refused and a broadcastable bool mask is taken."""
    wrong = []
    if not uint8:
        wrong.append("a uint8 mask was ACCEPTED (the bool rule is not enforced)")
    if not not_broadcastable:
        wrong.append("a mask that cannot broadcast was ACCEPTED")
    if broadcastable:
        wrong.append(f"a broadcastable bool mask was REFUSED ({broadcastable})")
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        "; ".join(wrong)
        if wrong
        else f"masked_fill refuses a uint8 mask ('{uint8}') and a mask that cannot broadcast "
        f"('{not_broadcastable}'), and takes a broadcastable bool one",
    )


def check_fill_value(device):
    """The notes' `masked_fill(mask == 0, -1e9)` then softmax, per dtype: does masked_fill take
    -1e9, and what weight do the masked scores get, in rows with an allowed key and in a row with
    every key masked (a query whose sequence has length 0)?"""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 1, 4, 8, generator=g) for _ in range(3))
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool).tril()
    mask[..., 3, :] = False  # a query with nothing to attend to
    observed = []
    for dtype in (FP32, BF16, FP16):
        qd, kd = (t.to(device=device, dtype=dtype) for t in (q, k))
        md = mask.to(device)
        seen = {"dtype": str(dtype), "raised": ""}
        scores = qd @ kd.transpose(-2, -1) / math.sqrt(qd.size(-1))
        try:
            weights = F.softmax(scores.masked_fill(md == 0, -1e9), dim=-1)
        except RuntimeError as exc:
            assert "overflow" in str(exc), exc  # any other error is the suite's, not the fill's
            observed.append({**seen, "raised": str(exc).splitlines()[0]})
            continue
        seen["masked_weight_max"] = weights[..., :3, :][~mask[..., :3, :].to(device)].max().item()
        seen["full_row_weight_max"] = weights[..., 3, :].max().item()
        args = [qd, kd, v.to(device=device, dtype=dtype), md, None]
        fused = sdpa(*args)[..., 3, :]
        seen["sdpa_row"] = "NaN" if fused.isnan().any() else ("0" if (fused == 0).all() else "other values")
        observed.append(seen)
    # A fill every dtype holds, for the evidence: finfo(dtype).min.
    lowest_ok = []
    for dtype in (FP32, BF16, FP16):
        qd, kd = (t.to(device=device, dtype=dtype) for t in (q, k))
        weights = (
            (qd @ kd.transpose(-2, -1)).masked_fill(~mask.to(device), torch.finfo(dtype).min).softmax(-1)
        )
        lowest_ok.append(bool((weights[..., :3, :][~mask[..., :3, :].to(device)] == 0).all()))
    return judge_masked_weights(observed, [str(d) for d, ok in zip((FP32, BF16, FP16), lowest_ok) if ok])


def judge_masked_weights(observed: list[dict], lowest_zero: list[str]) -> Finding:
    """The notes: scores filled with -1e9 get a weight ~0 after softmax and are ignored. Per dtype
    `observed` holds what masked_fill(-1e9) did: `raised` (its error, or ""), else the largest
    masked weight in rows with an allowed key (`masked_weight_max`) and the largest weight in a
    row with every key masked (`full_row_weight_max`). exp(−1e9 − max) underflows to exactly 0 in
    every dtype, so a masked weight above 0 is not rounding: where it is the row's uniform 1/S (a
    fully masked row) the masked keys are attended, not ignored.

    Fails where a masked key of a row with an allowed key gets weight, or no dtype takes the fill;
    depends where the statement holds only under a condition: the dtype (-1e9 does not fit fp16,
    largest 65504: masked_fill raises) and every row having an allowed key (a fully masked row is
    softmax over equal fills, 1/S each). `lowest_zero`: the dtypes where finfo(dtype).min masks
    exactly (the corrected fill), for the evidence."""
    dtypes = [o["dtype"] for o in observed]
    raised = [o["dtype"] for o in observed if o["raised"]]
    accepted = [o for o in observed if not o["raised"]]
    leaked = [o["dtype"] for o in accepted if o["masked_weight_max"] != 0]
    full_rows = [o["dtype"] for o in accepted if o["full_row_weight_max"] > 0]
    lines = []
    for o in observed:
        if o["raised"]:
            lines.append(f"{o['dtype']}: masked_fill(-1e9) raises ({o['raised']})")
            continue
        lines.append(
            f"{o['dtype']}: masked weights "
            + ("exactly 0" if o["masked_weight_max"] == 0 else f"up to {o['masked_weight_max']:.3g}, NOT ~0")
            + "; a fully masked row gives each masked key "
            + (
                f"{o['full_row_weight_max']:.3g} (uniform, NOT ~0)"
                if o["full_row_weight_max"] > 0
                else "weight 0"
            )
            + f" (SDPA: {o['sdpa_row']})"
        )
    conditions = []
    if raised:
        conditions.append(
            f"the dtype: -1e9 does not fit {', '.join(raised)} and masked_fill raises "
            f"(torch.finfo(scores.dtype).min masks exactly in {', '.join(lowest_zero) or 'no dtype'})"
        )
    if full_rows:
        conditions.append(
            "every query having an allowed key: a row with every key masked gets uniform weights, "
            "the masked keys attended"
        )
    if leaked or not accepted:
        verdict = Verdict.FAILS
    elif conditions:
        verdict = Verdict.DEPENDS
    else:
        verdict = Verdict.HOLDS
    return Finding(
        verdict,
        (f"depends on {'; and on '.join(conditions)}: " if verdict is Verdict.DEPENDS else "")
        + f"over {', '.join(dtypes)}: "
        + "; ".join(lines),
    )


def check_notes_snippet(device):
    """004's `attention` run from the note file, its broken line joined (the SyntaxError is the
    notes' snippets check's erratum), on the shapes its comments give: (30, 8, 10, 64) queries
    against (30, 8, 11, 64) keys and values."""
    attention = notes_code(NOTES_ATTENTION, repairs=((r"/\s*\n\s*math\.sqrt", "/ math.sqrt"),))["attention"]
    g = torch.Generator().manual_seed(3)
    q = torch.randn(30, 8, 10, 64, generator=g).to(device)
    k, v = (torch.randn(30, 8, 11, 64, generator=g).to(device) for _ in range(2))
    mask = torch.ones(30, 1, 10, 11, dtype=torch.bool, device=device)
    out, p_attn = attention(q, k, v, mask)
    return judge_notes_snippet(tuple(out.shape), tuple(p_attn.shape))


def judge_notes_snippet(out_shape: tuple, p_shape: tuple) -> Finding:
    """The notes' comments: output (30,8,10,64), the shape of the query, and p_attn (30,8,10,11)."""
    holds = out_shape == (30, 8, 10, 64) and p_shape == (30, 8, 10, 11)
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"with the line joined, attention returns {out_shape} and p_attn {p_shape}"
        + (" as the comments say" if holds else ": NOT the (30,8,10,64) and (30,8,10,11) the comments say"),
    )


# ---- the working set of a size: what must fit on the device before anything is made -------------
#
# Per variant, in bytes: the inputs (q, k, v and the (B, 1, S, S) boolean mask), then the larger of
# the float64 oracle's working set and the truth it leaves held plus the variant's own. Measured on
# the H100 (torch 2.11, allocator peaks at S = 8192, B = 2, H = 16): masked_fill 8.1 B per score in
# fp32 and 4.1 in bf16, sdpa_math 9.3 in fp32 and in bf16, sdpa 0.3; each estimate is above.
FLOAT64_BYTES = 8


def _scores(s) -> int:
    return s["b"] * s["h"] * s["s"] ** 2  # B·H·S² scores


def _head_rows(s) -> int:
    return s["b"] * s["h"] * s["s"] * s["d"]  # one of q, k, v, or the output


def _oracle_bytes(s) -> int:
    """`attention_float64`: q, k, v and the output in float64, and per block of query rows (at most
    2²⁵ scores, as it cuts them) the scores, their scaled and masked copies."""
    rows = min(max(1, 2**25 // (s["b"] * s["h"] * s["s"])), s["s"])
    return FLOAT64_BYTES * (5 * _head_rows(s) + 3 * s["b"] * s["h"] * rows * s["s"])


def _with_oracle(variant_bytes):
    """`peak_bytes(size, itemsize)`: the inputs, then the larger of the oracle's working set and the
    variant's with the float64 truth held."""

    def peak_bytes(s, itemsize: int) -> int:
        inputs = 3 * _head_rows(s) * itemsize + s["b"] * s["s"] ** 2
        truth = FLOAT64_BYTES * _head_rows(s)
        return inputs + max(_oracle_bytes(s), truth + variant_bytes(s, itemsize))

    return peak_bytes


def _masked_fill_bytes(s, itemsize: int) -> int:
    # At most three B·H·S² score tensors alive (matmul output and its scaled copy, then the masked
    # copy and the softmax), and `mask == 0`, one byte per B·S².
    return 3 * _scores(s) * itemsize + s["b"] * s["s"] ** 2


def _sdpa_bytes(s, itemsize: int) -> int:
    # Fused: the boolean mask as an additive bias (B·S² in the dtype, and its logical_not), and
    # O(B·H·S·D) buffers; no B·H·S² tensor.
    return 2 * s["b"] * s["s"] ** 2 * itemsize + 8 * _head_rows(s) * itemsize


def math_sdpa_dtype_bytes(itemsize: int) -> int:
    """The element size the math kernel computes its scores in. ATen's
    `_scaled_dot_product_attention_math` (aten/src/ATen/native/transformers/attention.cpp, "Keep
    query, key, value in high precision for accuracy") converts fp16 and bf16 query, key and value
    to float32 before the matmul, unless torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)
    was called; its scores and softmax are then fp32 tensors, and only the output is cast back."""
    if itemsize < 4 and not torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed():
        return 4
    return itemsize


def _sdpa_math_bytes(s, itemsize: int) -> int:
    # Scores and their softmax in the upcast dtype, a byte per score where the softmax tests for
    # fully masked rows, the mask as an additive bias in the query's dtype (with its logical_not),
    # and q, k, v upcast with q and k scaled.
    acc = math_sdpa_dtype_bytes(itemsize)
    return (2 * acc + 1) * _scores(s) + s["b"] * s["s"] ** 2 * (itemsize + 1) + 5 * _head_rows(s) * acc


VARIANTS = {
    # fp16 cannot hold -1e9: the notes' code raises there (`fill_value` decides that condition).
    "masked_fill": naive(
        masked_fill_attention,
        dtypes=(FP32, BF16),
        claim="masked_attention",
        peak_bytes=_with_oracle(_masked_fill_bytes),
    ),
    "sdpa": library(sdpa, peak_bytes=_with_oracle(_sdpa_bytes)),
    **(
        {"sdpa_math": library(sdpa_math, peak_bytes=_with_oracle(_sdpa_math_bytes))}
        if "math" in _backends()
        else {}
    ),
}


def _lengths_one(q, k, v, mask, lengths):
    # Every sequence of length 1: each query sees key 0 alone (a softmax over one key), and the
    # rows past the length are the padded rows the masks must still give a finite answer.
    ones = torch.ones_like(lengths)
    return q, k, v, combined_mask(ones, q.shape[2], q.device), ones


def _equal_keys(q, k, v, mask, lengths):
    # Every key the same: scores tie along each row, softmax is uniform over the allowed keys.
    return q, k[:, :, :1].expand_as(k).contiguous(), v, mask, lengths


def _larger_scores(q, k, v, mask, lengths):
    # Queries ×2⁴ (exact): scores of std 16 instead of 1, up to ≈ 80.
    return q * 2.0**4, k, v, mask, lengths


INPUT_FAMILIES = {
    "lengths_one": InputFamily(_lengths_one),
    "equal_keys": InputFamily(_equal_keys),
    "larger_scores": InputFamily(
        _larger_scores,
        fails=dict.fromkeys(
            VARIANTS,
            "exp(s − max) is off by u·|s − max| relative, ≤ 4u where the bound was derived (scores "
            "of std 1) and ≈ 80u here: measured 2.5e-6 of the outputs' scale (1.9e-6 math) against "
            "the bound's 2u·√S = 9.5e-7 in every kernel, the library's fused ones included: fp32 "
            "softmax's own loss, not the masked form's",
        ),
    ),
    "one_position": InputFamily(resize=lambda s: {**s, "s": 1}),  # S = 1: one query, one key
}


ATTENTION = Case(
    id="attention.masked",
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("sdpa", "masked_fill"), ("sdpa_math", "masked_fill")),
    tier=2,
    claim="Padding and sequence masks combine with & into one boolean mask; masked_fill(mask==0, -1e9) + "
    "softmax + matmul then gives the masked attention (F.scaled_dot_product_attention with that mask, "
    "the better way, is timed beside it as context).",
    source="004 NLP中的两种mask",
    # The fp32 bound is IEEE's: under TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 the score matmuls are TF32.
    # (The token has no dtype: the bf16/fp16 points go with it.)
    requires=("ieee_fp32",),
    make_inputs=make_attention,
    variants=VARIANTS,
    oracle=attention_float64,
    # Outputs are convex combinations of S N(0,1) values, O(1) but near zero where they
    # cancel: a weighted sum over S keys loses ~u·√S of the values' size whatever the output is,
    # so the bound is a floor at the output's scale, 2u·√S (fused kernels rescale partial sums as
    # they go: a few roundings more than the math path, inside the factor 2). bf16/fp16: scores
    # and probabilities are rounded to the dtype (u relative each, ×|score| ≤ 4 through exp),
    # the output once more: 2u relative, 4u of the scale.
    tolerance={
        FP32: lambda s: Tol(rtol=8 * U[FP32], floor=2 * U[FP32] * s["s"] ** 0.5),
        BF16: Tol(rtol=2 * U[BF16], floor=4 * U[BF16]),
        FP16: Tol(rtol=2 * U[FP16], floor=4 * U[FP16]),
    },
    dtypes={"cpu": (FP32,), "cuda": (FP32, BF16, FP16)},
    sizes={
        "quick": [{"s": s, "b": 2, "h": 4, "d": 32} for s in (64, 128, 256, 512)],
        # masked_fill's three fp32 score tensors: 3 × 2·16·S²·4 B = 103 GB at S = 16384.
        "full": [{"s": s, "b": 2, "h": 16, "d": 64} for s in (1024, 2048, 4096, 8192, 16384, 32768)],
    },
    claims=(
        Claim(
            "masks",
            "padding mask 和 sequence mask非官方命名,在transformer decoder中两种mask需要结合起来实现 … "
            "return torch.from_numpy(subsequent_mask) == 0 #对应True为不需要mask的部分",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the notes' subsequent_mask is (1, S, S) bool, True on and below the diagonal, and "
            "combined with a padding mask by & it allows exactly the keys j ≤ i with j < length",
        ),
        Claim(
            "mask_rules",
            "mask矩阵必须可以和value矩阵广播 … mask矩阵必须是一个boolean类型的矩阵",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="masked_fill refuses a mask that does not broadcast with the tensor and a mask "
            "that is not bool (the notes' uint8 np.triu matrix), and takes a broadcastable bool mask",
        ),
        Claim(
            "masked_attention",
            "scores = scores.masked_fill(mask == 0, -1e9) … "
            "#使用mask，对已经计算好的scores，按照mask矩阵，填-1e9， … "
            "#然后在下一步计算softmax的时候，被设置成-1e9的数对应的值~0,被忽视",
            "004",
            ClaimKind.CORRECTNESS,
            reading="with the notes' fill of -1e9, every masked score gets weight ~0 after softmax, in "
            "every dtype the attention runs in, and the masked attention equals the float64 truth",
        ),
        Claim(
            "shapes",
            "query, key, value的形状类似于(30, 8, 10, 64), (30, 8, 11, 64), … 得到的tensor是(30,8,10,64) … "
            "p_attn，形状为(30,8,10,11)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the notes' attention returns (30, 8, 10, 64) and p_attn (30, 8, 10, 11) for "
            "those shapes",
        ),
    ),
    checks={
        "masks": Check(check_masks, claim="masks"),
        "mask_rules": Check(check_mask_rules, claim="mask_rules"),
        "fill_value": Check(check_fill_value, claim="masked_attention"),
        "notes_snippet": Check(check_notes_snippet, claim="shapes"),
        # Which SDPA kernel ran: context for the timings, deciding nothing.
        "sdpa_backend": Check(check_sdpa_backend),
    },
    metrics=sdpa_metrics,
    input_families=INPUT_FAMILIES,
    # The notes teach the masks and the masked_fill attention; SDPA is the catalogue's better way,
    # timed and reported as context, deciding nothing.
    verdict=FromFindings(),
    flops=lambda s: 4 * s["b"] * s["h"] * s["s"] ** 2 * s["d"],
    x="s",
)
