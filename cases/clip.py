"""Gradient-norm clipping: the notes' hand-written loop vs torch.nn.utils.clip_grad_norm_
(note 001, 修正梯度).

The notes' version (an old copy of torch's) computes one norm per parameter and pulls each to the
host with `.item()`: P kernel launches, P device→host copies, and on CUDA P synchronisations, then
P in-place scalings. torch's current version stacks the P per-tensor norms with `_foreach_norm`
(a handful of multi-tensor kernels), takes the norm of the norms on the device and scales with
`_foreach_mul_`: no host round trip at all. The bytes read and written are the same (read every
gradient once for the norm, read + write it once to scale), so the difference is per-tensor
overhead, and the sweep is over the number of tensors at a fixed total size.
"""

from __future__ import annotations

import math

import torch

from cases._lib.inputs import generator
from cases._lib.timing import judge_faster, timed_claim
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import Case, Check, Finding, InputFamily, Tol, library, naive, optimized
from harness.rules import Faster

FP32 = torch.float32
inf = math.inf


def notes_clip_grad_norm_(parameters, max_norm, norm_type=2):
    """Verbatim from the notes (001, 修正梯度), `.data` and all."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = list(filter(lambda p: p.grad is not None, parameters))
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if norm_type == inf:
        total_norm = max(p.grad.data.abs().max() for p in parameters)
    else:
        total_norm = 0
        for p in parameters:
            param_norm = p.grad.data.norm(norm_type)
            total_norm += param_norm.item() ** norm_type
        total_norm = total_norm ** (1.0 / norm_type)
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for p in parameters:
            p.grad.data.mul_(clip_coef)
    return total_norm


def make_params(size, dtype, device, seed):
    """`p` parameters sharing `total` elements, with random gradients, their pristine copies (the
    clipping is in place, so each call restores them first), and a max_norm that forces clipping."""
    g = generator(device, seed)
    p, total = size["p"], size["total"]
    params, pristine = [], []
    for _ in range(p):
        w = torch.randn(total // p, generator=g, device=device).to(dtype).requires_grad_(True)
        grad = torch.randn(total // p, generator=g, device=device).to(dtype)
        w.grad = grad.clone()
        params.append(w)
        pristine.append(grad)
    norm = torch.linalg.vector_norm(torch.cat(pristine).double()).item()
    return params, pristine, 0.5 * norm


def _restore(params, pristine):
    # One multi-tensor copy: the same fixed cost for every variant.
    torch._foreach_copy_([w.grad for w in params], pristine)


def _result(total_norm, params):
    norm = torch.as_tensor(total_norm, dtype=torch.float64).reshape(1)
    return norm, torch.cat([w.grad.reshape(-1) for w in params])


def notes_loop(params, pristine, max_norm):
    _restore(params, pristine)
    return _result(notes_clip_grad_norm_(params, max_norm), params)


def torch_foreach(params, pristine, max_norm):
    _restore(params, pristine)
    return _result(torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True).cpu(), params)


def torch_per_tensor(params, pristine, max_norm):
    # torch's own non-foreach path: per-tensor norms, but no `.item()` (stays on the device).
    _restore(params, pristine)
    return _result(torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=False).cpu(), params)


def clipped_float64(params, pristine, max_norm, norm_type=2.0):
    """The definition: the norm of all gradients concatenated, coef = min(1, max_norm/(norm+1e-6))."""
    flat = torch.cat([g.reshape(-1) for g in pristine]).double()
    norm = torch.linalg.vector_norm(flat, norm_type)
    coef = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    return norm.reshape(1).cpu(), flat * coef


# ---- checks --------------------------------------------------------------------------------------


# A clipped gradient g·coef, coef = max_norm/(norm + 1e-6): fl(max_norm), the sum, the quotient and the
# product round once each, ≤ 4u relative to the element itself (no floor), ×2 margin.
SCALED_RTOL = 8 * U[FP32]


def norm_tolerance(size) -> Tol:
    """The case's bound on a 2-norm clipping, derived at CASE.tolerance."""
    return Tol(rtol=U[FP32] * ((size["total"] // size["p"] + size["p"]) / 8 + 4))


def check_inf_norm(device):
    """norm_type=inf: the notes' max-of-maxes and torch agree with the definition."""
    params, pristine, _ = make_params({"p": 7, "total": 7 * 300}, FP32, device, seed=4)
    truth_norm, _ = clipped_float64(params, pristine, 1.0, inf)
    max_norm = 0.25 * truth_norm.item()
    truth_norm, truth = clipped_float64(params, pristine, max_norm, inf)
    _restore(params, pristine)
    notes = notes_clip_grad_norm_(params, max_norm, inf)
    notes_grads = torch.cat([w.grad for w in params])
    _restore(params, pristine)
    ours = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=inf)
    ours_grads = torch.cat([w.grad for w in params])
    for name, norm, grads in (("notes", notes, notes_grads), ("torch", ours, ours_grads)):
        # The inf norm is the largest |g|, one of the fp32 values itself: exact.
        torch.testing.assert_close(
            torch.as_tensor(norm).double().cpu().reshape(1), truth_norm, rtol=0, atol=0
        )
        torch.testing.assert_close(
            grads.double(), truth, rtol=SCALED_RTOL, atol=0, msg=f"{name} inf-norm clipping"
        )
    # The largest clipped |g| is max_norm·norm/(norm + 1e-6) < max_norm, up to the same roundings.
    assert notes_grads.abs().max().item() <= max_norm * (1 + SCALED_RTOL)
    return Finding(
        None, f"inf norm {float(notes):.4f}: the notes' loop and torch both clip to max_norm {max_norm:.4f}"
    )


def check_notes_returns_python_float(device):
    """A behaviour difference beyond speed: the notes' 2-norm returns a Python float (the sum of
    `.item()`s, accumulated in double), torch returns a 0-dim tensor on the gradients' device."""
    params, pristine, max_norm = make_params({"p": 5, "total": 500}, FP32, device, seed=5)
    notes = notes_loop(params, pristine, max_norm)[0]
    _restore(params, pristine)
    ours = torch.nn.utils.clip_grad_norm_(params, max_norm)
    assert isinstance(notes_clip_grad_norm_(params, max_norm), float)
    assert isinstance(ours, torch.Tensor) and ours.dim() == 0 and ours.device.type == device.type
    # Two 2-norms of the same gradients, each within the case's own bound of float64 (below): twice it.
    bound = 2 * norm_tolerance({"p": 5, "total": 500}).rtol
    torch.testing.assert_close(notes, ours.double().cpu().reshape(1), rtol=bound, atol=0)
    return Finding(
        None,
        "same total norm; the notes' version returns a float (host sync per parameter), "
        "torch a 0-dim device tensor (no sync)",
    )


def check_loop_vs_foreach_scaling(device):
    """Time per call against the number of parameter tensors at a fixed total size: the notes'
    loop grows with P (per-tensor launch + .item()), foreach much less. Each P timed in
    alternating rounds; the claim judged at the largest P by the gain policy (cases._lib.timing)."""
    total = 2**16 if device.type == "cpu" else 2**22
    rows = []
    for p in (4, 64, 1024):
        params, pristine, max_norm = make_params({"p": p, "total": total}, FP32, device, seed=6)
        ratio, busy = timed_claim(
            {
                "loop": lambda: notes_loop(params, pristine, max_norm),
                "foreach": lambda: torch_foreach(params, pristine, max_norm),
            },
            fast="foreach",
            slow="loop",
            device=device,
            cap_s=0.3,
        )
        rows.append((p, ratio))
    verdict, said = judge_faster(rows[-1][1], busy, f"loop ÷ foreach at P={rows[-1][0]}")
    return Finding(
        verdict,
        f"{total} elements on {device.type}, loop ÷ foreach: "
        + ", ".join(f"P={p}: {r.point:.3g}×" for p, r in rows[:-1])
        + f"; {said}",
    )


def _scaled_gradients(power):
    def transform(params, pristine, max_norm):
        # A power of two scales exactly; max_norm with them, so the clipping still happens.
        pristine = [g * 2.0**power for g in pristine]
        for w, g in zip(params, pristine):
            w.grad = g.clone()
        return params, pristine, max_norm * 2.0**power

    return transform


def _zero_gradients(params, pristine, max_norm):
    # A total norm of 0: nothing to clip (coef = max_norm / (0 + 1e-6) > 1), every gradient 0.
    pristine = [torch.zeros_like(g) for g in pristine]
    for w, g in zip(params, pristine):
        w.grad = g.clone()
    return params, pristine, max_norm


_OVERFLOWS = (
    "Σg² overflows fp32 (each g² ≈ 2¹²⁰, 2¹⁶ of them) though the norm itself, ≈ 3e20 ≈ 2⁶⁸, is "
    "2⁶⁰ times below fp32's largest: every variant, torch's vector_norm and _foreach_norm "
    "included, returns an infinite norm (measured: inf against 2.96e20), and coef = max_norm / inf "
    "= 0 zeroes every gradient without an error (error_if_nonfinite=False is the default)"
)
INPUT_FAMILIES = {
    "zero_gradients": InputFamily(_zero_gradients),
    "gradients_near_sqrt_fp32_max": InputFamily(
        _scaled_gradients(60), fails=dict.fromkeys(("notes_loop", "foreach", "per_tensor"), _OVERFLOWS)
    ),
    # ×2⁻⁶⁰: squares ≈ 2⁻¹²⁰, still normal in fp32 (down to 2⁻¹²⁶): relative rounding as ever.
    "tiny_gradients": InputFamily(_scaled_gradients(-60)),
    "one_parameter": InputFamily(resize=lambda s: {**s, "p": 1}),  # one tensor: no sum of norms
}


CASE = Case(
    id="clip.grad_norm",
    tier=2,
    claim="The notes' clip_grad_norm_ (per-parameter norm with .item(), Python sum) computes the same "
    "clipping as torch.nn.utils.clip_grad_norm_, which is faster (foreach, no host sync).",
    source="001 修正梯度",
    make_inputs=make_params,
    variants={
        "notes_loop": naive(notes_loop),
        "foreach": optimized(torch_foreach),
        "per_tensor": library(torch_per_tensor),
    },
    oracle=clipped_float64,
    # The norm adds squares, terms of one sign: each addition is off by ≤ u of the partial sum,
    # so m additions in a row by one accumulator by ≤ m·u relative (Higham). torch's CPU norm
    # adds a tensor's n = total/p squares in fp32 across ≥ 8 vector lanes (AVX2; m ≤ n/8), then
    # the p norms once more; GPUs reduce in trees. Measured on AVX-512 at n = 2²²: 1366u, under
    # n/8·u = 524288u (at n = 2¹³: 2u, under 1024u). The sqrt halves it; coef and g·coef add two
    # roundings; every clipped element carries it relative to itself: no absolute floor.
    tolerance={FP32: norm_tolerance},
    sizes={
        "quick": [{"p": p, "total": 2**16} for p in (8, 128, 1024)],
        "full": [{"p": p, "total": 2**26} for p in (16, 256, 4096, 16384)],
    },
    x="p",
    checks={
        "inf_norm": Check(check_inf_norm),
        "notes_returns_python_float": Check(check_notes_returns_python_float),
        "loop_vs_foreach_scaling": Check(check_loop_vs_foreach_scaling),
    },
    input_families=INPUT_FAMILIES,
    verdict=Faster("foreach", "notes_loop"),
    # Read every gradient for the norm, read + write it to scale, plus the restoring copy.
    bytes_moved=lambda s, b: 4 * s["total"] * b,
)
