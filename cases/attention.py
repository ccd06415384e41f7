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
    Erratum,
    ErratumKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    library,
    naive,
)
from harness import measure
from harness.contract.rules import FromFindings

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16


def subsequent_mask(size):
    """The notes' sequence mask, verbatim: (1, size, size) bool, True on and below the diagonal."""
    attn_shape = (1, size, size)
    mask = np.triu(np.ones(attn_shape), k=1).astype("uint8")
    return torch.from_numpy(mask) == 0


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
    """np.triu-built sequence mask == torch.triu on the device, and padding & sequence combined
    by broadcasting equals a per-element loop over (b, i, j): allowed iff j ≤ i and j < length."""
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
    # "mask矩阵必须是一个boolean类型的矩阵": does masked_fill refuse the notes' uint8 matrix?
    try:
        torch.zeros(1, s, s, device=device).masked_fill(
            torch.from_numpy(np.triu(np.ones((1, s, s)), k=1).astype("uint8")).to(device), 1.0
        )
        uint8_refused = False
    except RuntimeError:
        uint8_refused = True
    return judge_masks(
        sequence,
        bool(notes_combined.shape == loop.shape and torch.equal(notes_combined, loop)),
        uint8_refused,
        f"on {device.type}, S = {s}: (B,1,S) padding & (1,S,S) sequence broadcasts to (B,S,S), "
        f"lengths {lengths}",
        size=s,
    )


def judge_masks(
    sequence: dict, combined_equals_loop: bool, uint8_refused: bool, detail: str, size: int = 12
) -> Finding:
    """The notes' masks: `subsequent_mask` (`sequence`: its dtype, shape, whether it equals
    torch.triu(ones, 1) == 0 and whether it is lower-triangular, as observed) is a (1, S, S) bool
    mask True on and below the diagonal ("True为不需要mask的部分"), and padding & sequence combined by
    broadcasting allows exactly j ≤ i and j < length (a loop). The notes' "the mask must be
    boolean" is a statement checked beside it: an erratum if masked_fill took a uint8 mask."""
    errata = ()
    if not uint8_refused:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "mask矩阵必须是一个boolean类型的矩阵",
                f"masked_fill accepted a uint8 mask in torch {torch.__version__}",
            ),
        )
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
        f"(b,i,j) loop; masked_fill {'refuses' if uint8_refused else 'accepts'} a uint8 mask",
        errata,
    )


def check_fill_value(device):
    """The notes fill with -1e9 'so softmax gives ≈ 0'. Per dtype: does masked_fill accept it, and
    is the masked weight exactly 0? And a row with every key masked: what each form returns."""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 1, 4, 8, generator=g) for _ in range(3))
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool).tril()
    mask[..., 3, :] = False  # a query with nothing to attend to (e.g. a padded query, length 0)
    observed = []
    for dtype in (FP32, BF16, FP16):
        args = [t.to(device=device, dtype=dtype) for t in (q, k, v)] + [mask.to(device), None]
        seen = {"dtype": str(dtype), "raised": ""}
        try:
            naive_out = masked_fill_attention(*args)
        except RuntimeError as exc:
            assert "overflow" in str(exc), exc  # any other error is the suite's, not the fill's
            observed.append({**seen, "raised": str(exc).splitlines()[0]})
            continue
        scores = (args[0] @ args[1].transpose(-2, -1)).masked_fill(args[3] == 0, -1e9).softmax(-1)
        # exp(−1e9 − max) underflows to 0 in every dtype: exactly 0 expected.
        seen["masked_weight_max"] = scores[..., :3, :][~mask[..., :3, :].to(device)].max().item()
        uniform = args[2].double().mean(-2)[..., 0, :]
        # Four equal scores: weights exactly 1/4, products 0.25·v exact; the 3 additions in the dtype
        # are within γ₃·Σ|0.25·v| < 4u·mean|v| of the mean, elementwise.
        bound = 4 * U[dtype] * args[2].double().abs().mean(-2)[..., 0, :]
        excess = (naive_out[..., 3, :].double() - uniform).abs() - bound
        seen["masked_row_excess"] = excess.max().item()  # ≤ 0: the fully masked row is V's mean
        fused = sdpa(*args)[..., 3, :]
        seen["sdpa_row"] = "NaN" if fused.isnan().any() else ("0" if (fused == 0).all() else "other values")
        observed.append(seen)
    # The technique with a fill every dtype holds: finfo(dtype).min (what the notes' -1e9 stands for).
    lowest_ok = []
    for dtype in (FP32, BF16, FP16):
        qd, kd = (t.to(device=device, dtype=dtype) for t in (q, k))
        weights = (
            (qd @ kd.transpose(-2, -1)).masked_fill(~mask.to(device), torch.finfo(dtype).min).softmax(-1)
        )
        lowest_ok.append(bool((weights[..., :3, :][~mask[..., :3, :].to(device)] == 0).all()))
    return judge_masked_weights(observed, [str(d) for d, ok in zip((FP32, BF16, FP16), lowest_ok) if ok])


def judge_masked_weights(observed: list[dict], lowest_zero: list[str]) -> Finding:
    """The notes' claim: a masked score, filled with a large negative number, gets weight ≈ 0 after
    softmax. Per dtype `observed` holds what masked_fill(-1e9) did: `raised` (its error, or ""),
    else the largest masked weight (`masked_weight_max`, exactly 0 expected: exp(−1e9 − max)
    underflows), how far a fully masked row lies outside the rounding bound of V's mean
    (`masked_row_excess`, ≤ 0 expected: four equal fills give weights of exactly 1/4) and what
    SDPA gives that row (context). The technique holds where the masked weights are exactly 0 in
    every dtype with a fill the dtype can hold (-1e9 where masked_fill accepts it, finfo(dtype).min
    in every dtype) and the masked row is V's mean. That -1e9 itself overflows a dtype (fp16's
    largest is 65504) is the notes' constant at fault, an erratum, never a condition of the technique."""
    dtypes = [o["dtype"] for o in observed]
    raised = [o["dtype"] for o in observed if o["raised"]]
    accepted = [o for o in observed if not o["raised"]]
    not_zero = [o["dtype"] for o in accepted if o["masked_weight_max"] != 0]
    off_mean = [o["dtype"] for o in accepted if o["masked_row_excess"] > 0]
    works = all(d in lowest_zero for d in dtypes) and bool(accepted) and not not_zero and not off_mean
    errata = ()
    if raised:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "scores = scores.masked_fill(mask == 0, -1e9)",
                f"-1e9 does not fit {', '.join(raised)}: masked_fill raises; torch.finfo(scores.dtype).min "
                "(or F.scaled_dot_product_attention with the boolean mask) masks in every dtype",
            ),
        )
    lines = []
    for o in observed:
        if o["raised"]:
            lines.append(f"{o['dtype']}: masked_fill(-1e9) raises ({o['raised']})")
            continue
        lines.append(
            f"{o['dtype']}: masked weights "
            + ("exactly 0" if o["masked_weight_max"] == 0 else f"up to {o['masked_weight_max']:.3g}, NOT 0")
            + "; a fully masked row gives "
            + ("the mean of V" if o["masked_row_excess"] <= 0 else "NOT the mean of V")
            + f" (masked_fill) vs {o['sdpa_row']} (SDPA)"
        )
    return Finding(
        Verdict.HOLDS if works else Verdict.FAILS,
        f"masked weights exactly 0 with finfo(dtype).min in {', '.join(lowest_zero) or 'no dtype'} of "
        f"{', '.join(dtypes)}; -1e9 accepted in {', '.join(o['dtype'] for o in accepted) or 'none'}: "
        + "; ".join(lines),
        errata,
    )


_NOTES_ATTENTION = """
def attention(query, key, value, mask=None, dropout=None):
  "Compute 'Scaled Dot Product Attention'"
  d_k = query.size(-1)
  scores = torch.matmul(query, key.transpose(-2, -1)) /
    math.sqrt(d_k)
  if mask is not None:
    scores = scores.masked_fill(mask == 0, -1e9)
  p_attn = F.softmax(scores, dim = -1)
  if dropout is not None:
    p_attn = dropout(p_attn)
  return torch.matmul(p_attn, value), p_attn
"""


def check_notes_snippet(device):
    """004's `attention` as written (comments dropped), then with its broken line joined, on the
    shapes its comments give: (30, 8, 10, 64) queries against (30, 8, 11, 64) keys and values."""
    try:
        compile(_NOTES_ATTENTION, "<notes 004>", "exec")
        syntax_error = ""
    except SyntaxError as exc:
        syntax_error = f"{exc.msg} (line {exc.lineno})"
    scope = {"torch": torch, "math": math, "F": F}
    exec(_NOTES_ATTENTION.replace("/\n    math", "/ math"), scope)  # noqa: S102 - the notes' text, joined
    g = torch.Generator().manual_seed(3)
    q = torch.randn(30, 8, 10, 64, generator=g).to(device)
    k, v = (torch.randn(30, 8, 11, 64, generator=g).to(device) for _ in range(2))
    mask = torch.ones(30, 1, 10, 11, dtype=torch.bool, device=device)
    out, p_attn = scope["attention"](q, k, v, mask)
    return judge_notes_snippet(syntax_error, tuple(out.shape), tuple(p_attn.shape))


def judge_notes_snippet(syntax_error: str, out_shape: tuple, p_shape: tuple) -> Finding:
    """The notes' comments: output (30,8,10,64), the shape of the query, and p_attn (30,8,10,11).
    A line break outside brackets after `/` does not compile: a typo of the notes, an erratum."""
    errata = ()
    if syntax_error:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "scores = torch.matmul(query, key.transpose(-2, -1)) /",
                f"SyntaxError as written: {syntax_error}; the continuation needs brackets or a backslash",
            ),
        )
    holds = out_shape == (30, 8, 10, 64) and p_shape == (30, 8, 10, 11)
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"with the line joined, attention returns {out_shape} and p_attn {p_shape}"
        + (" as the comments say" if holds else ": NOT the (30,8,10,64) and (30,8,10,11) the comments say"),
        errata,
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
    # fp16 cannot hold -1e9: the notes' code raises there (see `fill_value`).
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
            "padding mask 和 sequence mask … 在transformer decoder中两种mask需要结合起来实现; "
            "return torch.from_numpy(subsequent_mask) == 0 #对应True为不需要mask的部分",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "masked_attention",
            "#使用mask，对已经计算好的scores，按照mask矩阵，填[a large negative number: the notes' -1e9, "
            "an erratum where the dtype cannot hold it] … "
            "在下一步计算softmax的时候，被设置成…的数对应的值~0,被忽视",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "shapes",
            "query, key, value的形状类似于(30, 8, 10, 64), (30, 8, 11, 64) … 得到的tensor是(30,8,10,64) … "
            "p_attn，形状为(30,8,10,11)",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "masks": Check(check_masks, claim="masks"),
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
