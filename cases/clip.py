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
    optimized,
)
from harness.contract.rules import Faster

FP32 = torch.float32
inf = math.inf


NOTES_SNIPPET = "001#15"


def _notes_function():
    """001's `clip_grad_norm_`, compiled from the note file itself (docstring and all), with the one
    name it uses and never defines supplied: `inf`, which torch's copy imported from `torch._six`
    (gone: the snippets check lists it, 001:399). Nothing else is repaired."""
    from notes import parse as snippets

    snippet = snippets.snippet(NOTES_SNIPPET)
    scope = {"torch": torch, "inf": math.inf}
    exec(compile(snippet.source, snippet.filename, "exec"), scope)  # noqa: S102 - the notes' text
    return scope["clip_grad_norm_"]


notes_clip_grad_norm_ = _notes_function()


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
    """norm_type='inf', spelled as the notes' docstring spells it (a string: both functions take
    float(norm_type)): the notes' max-of-maxes and torch agree with the definition."""
    params, pristine, _ = make_params({"p": 7, "total": 7 * 300}, FP32, device, seed=4)
    truth_norm, _ = clipped_float64(params, pristine, 1.0, inf)
    max_norm = 0.25 * truth_norm.item()
    truth_norm, truth = clipped_float64(params, pristine, max_norm, inf)
    _restore(params, pristine)
    notes = notes_clip_grad_norm_(params, max_norm, "inf")
    notes_grads = torch.cat([w.grad for w in params])
    _restore(params, pristine)
    ours = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type="inf")
    ours_grads = torch.cat([w.grad for w in params])
    # The inf norm is the largest |g|, one of the fp32 values itself: exact. The clipped gradients:
    # within SCALED_RTOL of float64's, each relative to itself.
    observed = {}
    for name, norm, grads in (("notes", notes, notes_grads), ("torch", ours, ours_grads)):
        norm_err = abs(torch.as_tensor(norm).double().cpu().item() - truth_norm.item())
        grad_err = ((grads.double() - truth).abs() / truth.abs().clamp_min(1e-300)).max().item()
        observed[name] = (norm_err, grad_err, grads.abs().max().item())
    return judge_inf_norm(observed, max_norm, truth_norm.item())


def judge_inf_norm(observed: dict, max_norm: float, truth_norm: float) -> Finding:
    """The notes' "Can be 'inf' for infinity norm": their function's inf norm equals max|g| exactly,
    its clipped gradients are float64's to SCALED_RTOL, and none exceeds max_norm (up to the same
    roundings). `observed`: name → (norm error, largest relative gradient error, largest |g|);
    "notes" decides, torch's is reported beside it."""
    wrong = {
        name: f"{name}: norm off by {ne:.3g}, gradients {ge:.3g} relative, max|g| {gm:.6g}"
        for name, (ne, ge, gm) in observed.items()
        if ne != 0 or ge > SCALED_RTOL or gm > max_norm * (1 + SCALED_RTOL)
    }
    right = [name for name in observed if name not in wrong]
    return Finding(
        Verdict.FAILS if "notes" in wrong or "notes" not in observed else Verdict.HOLDS,
        f"norm_type='inf': inf norm {truth_norm:.4f}, max_norm {max_norm:.4f}: "
        + "; ".join(
            list(wrong.values())
            + ([f"{' and '.join(right)} give max|g| exactly and clip to max_norm"] if right else [])
        ),
    )


def check_notes_returns_python_float(device):
    """A behaviour difference beyond speed: the notes' 2-norm returns a Python float (the sum of
    `.item()`s, accumulated in double), torch returns a 0-dim tensor on the gradients' device."""
    params, pristine, max_norm = make_params({"p": 5, "total": 500}, FP32, device, seed=5)
    truth_norm, _ = clipped_float64(params, pristine, max_norm)
    notes = notes_loop(params, pristine, max_norm)[0]
    _restore(params, pristine)
    ours = torch.nn.utils.clip_grad_norm_(params, max_norm)
    _restore(params, pristine)
    returned = notes_clip_grad_norm_(params, max_norm)
    return judge_returned_norm(
        abs(notes.item() - truth_norm.item()) / truth_norm.item(),
        norm_tolerance({"p": 5, "total": 500}).rtol,
        type(returned).__name__,
        f"{type(ours).__name__} of dim {ours.dim()} on {ours.device.type}",
    )


def judge_returned_norm(rel_err: float, bound: float, notes_type: str, torch_returns: str) -> Finding:
    """The notes' "Returns: Total norm of the parameters (viewed as a single vector)": the value
    returned equals the float64 norm of the concatenated gradients within the case's bound. Its
    type (a Python float, one host sync per parameter, where torch returns a device tensor) is
    reported, deciding nothing."""
    return Finding(
        Verdict.HOLDS if rel_err <= bound else Verdict.FAILS,
        f"the notes' version returns the total norm {'within' if rel_err <= bound else 'OUTSIDE'} "
        f"{bound:.3g} relative of float64's ({rel_err:.3g}), as a {notes_type} (a host sync per "
        f"parameter); torch returns a {torch_returns} (no sync)",
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
    return judge_foreach_scaling(rows, busy, f"{total} elements on {device.type}")


def judge_foreach_scaling(rows: list, busy: str | None, where: str) -> Finding:
    """torch's foreach path against the notes' loop, at the largest P, by the gain policy: a
    comparison the catalogue adds (the notes promise no speed), reported as context."""
    verdict, said = judge_faster(rows[-1][1], busy, f"loop ÷ foreach at P={rows[-1][0]}")
    return Finding(
        verdict,
        f"{where}, loop ÷ foreach: "
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
        "notes_loop": naive(notes_loop, claim="total_norm"),
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
    claims=(
        Claim(
            "total_norm",
            "The norm is computed over all gradients together, as if they were concatenated into a single "
            "vector. Gradients are modified in-place.",
            "001",
            ClaimKind.CORRECTNESS,
            reading="the notes' clip_grad_norm_ (their code, `inf` supplied) scales every gradient in "
            "place by min(1, max_norm/(‖g‖₂ + 1e-6)), ‖g‖₂ the 2-norm of all gradients concatenated: "
            "equal to that definition in float64 within the derived bound",
        ),
        Claim(
            "inf_norm",
            "norm_type (float or int): type of the used p-norm. Can be ``'inf'`` for infinity norm.",
            "001",
            ClaimKind.CORRECTNESS,
            reading="the notes' function called with norm_type='inf' returns max|g| over all gradients and "
            "clips them to max_norm (torch's alike, reported beside it)",
        ),
        Claim(
            "returns_total_norm",
            "Returns: Total norm of the parameters (viewed as a single vector).",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="the value the notes' function returns is the 2-norm of all gradients concatenated "
            "(the gradients', not the parameters' own values: the docstring's 'of the parameters')",
        ),
    ),
    checks={
        "inf_norm": Check(check_inf_norm, claim="inf_norm"),
        "notes_returns_python_float": Check(check_notes_returns_python_float, claim="returns_total_norm"),
        # torch's foreach path is faster: the catalogue's comparison, not the notes' (context).
        "loop_vs_foreach_scaling": Check(check_loop_vs_foreach_scaling),
    },
    input_families=INPUT_FAMILIES,
    # Context: the notes promise no speed; foreach against their loop is reported, deciding nothing.
    verdict=Faster("foreach", "notes_loop"),
    # Read every gradient for the norm, read + write it to scale, plus the restoring copy.
    bytes_moved=lambda s, b: 4 * s["total"] * b,
)
