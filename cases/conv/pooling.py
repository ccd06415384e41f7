"""conv.pooling: the pooling layers the notes describe (notes 001 "Pooling layer"):
"FractionalMaxPool2d: the max-pooling is applied in kH * kW regions by stochastic step";
"LPPool: return the norm of the current feature vector".
"""

from __future__ import annotations

import torch
from torch import nn

from cases._lib.conv import FP32
from cases._lib.inputs import generator
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict
from harness.contract.rules import FromFindings


def lp_pool_float64(x: torch.Tensor, p: float, k: int) -> torch.Tensor:
    """(Σ_window x^p)^(1/p) over non-overlapping k×k windows, in float64, by explicit slicing: the
    formula torch documents for LPPool2d, sharing no code with it."""
    x = x.double()
    n, c, h, w = x.shape
    out = torch.empty(n, c, h // k, w // k, dtype=torch.float64, device=x.device)
    for i in range(h // k):
        for j in range(w // k):
            out[:, :, i, j] = (
                x[:, :, i * k : (i + 1) * k, j * k : (j + 1) * k].pow(p).sum((-2, -1)).pow(1 / p)
            )
    return out


def judge_lp_pool(rel_err: float, bound: float, signed: dict[float, tuple[float, int]]) -> Finding:
    """The notes: LPPool returns the norm of each window. `rel_err`: LPPool2d against the float64
    (Σ x^p)^(1/p) on positive inputs (the layer computing its documented formula); `signed`: p →
    (largest gap to the window's p-norm (Σ|x|^p)^(1/p), relative to the largest norm; outputs that
    are NaN) on inputs of either sign. Holds where every output is the norm; fails where any p
    misses it, or where the layer leaves its own formula."""
    off = {p: (gap, nans) for p, (gap, nans) in signed.items() if gap > bound or nans}
    held = rel_err <= bound and bool(signed) and not off
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"LPPool2d vs float64 (Σ x^p)^(1/p) over 2×2 windows of x > 0: max relative error {rel_err:.2e} "
        f"(bound {bound:.2e}); on inputs of either sign against the p-norm (Σ|x|^p)^(1/p): "
        + ", ".join(
            f"p={p:g} off by {gap:.3g}" + (f" with {n} NaN" if n else "") for p, (gap, n) in signed.items()
        )
        + (
            ": a norm only for x ≥ 0 or even p (it takes x^p without |·|: p=1 returns Σx, odd p a NaN "
            "where Σx^p < 0); LPPool2d of x.abs() is the norm"
            if off
            else ""
        ),
    )


def check_lp_pool(device):
    g = generator(device, 11)
    x = 0.1 + torch.rand(2, 3, 8, 10, generator=g, device=device)  # positive: the formula's own check
    # Per window: k² = 4 positive terms x^p (one rounding each), their sum (≤ 3 more, positive
    # terms: no cancellation), ×k² and the p-th root (2 more): ≤ (k² + 4)·u relative before the
    # root, which divides it by p ≥ 1; held to (k² + 4)·u.
    bound = (4 + 4) * U[FP32]
    errs = []
    for p in (2.0, 3.0):
        got = nn.LPPool2d(p, kernel_size=2)(x)
        truth = lp_pool_float64(x, p, 2)
        errs.append(((got.double() - truth).abs() / truth.abs()).max().item())
    signed_x = torch.randn(2, 3, 8, 10, generator=g, device=device)
    signed = {}
    for p in (1.0, 2.0, 3.0):
        got = nn.LPPool2d(p, kernel_size=2)(signed_x).double()
        norm = lp_pool_float64(signed_x.abs(), p, 2)
        nans = int(got.isnan().sum())
        gap = ((got.nan_to_num(0.0) - norm).abs().max() / norm.abs().max()).item()
        signed[p] = (gap, nans)
    return judge_lp_pool(max(errs), bound, signed)


def judge_fractional_max_pool(
    shapes_ok: bool, windows_ok: bool, steps: str, same_seed_same: bool, seeds_differ: bool
) -> Finding:
    """FractionalMaxPool2d: the requested output size, every output the max of a kH×kW window of
    the input (`windows_ok`), window starts that advance by a non-integer step (`steps`: empty where
    they do, from 0 to the last window, each step ⌊α⌋ or ⌈α⌉ with α = (in − k)/(out − 1) and both
    present; else what was seen), the same random samples giving the same windows and other
    samples other windows (the stochastic step the notes describe)."""
    parts = {
        "output size as requested": shapes_ok,
        "each output the max of a 2×2 window": windows_ok,
        "starts step by ⌊α⌋ or ⌈α⌉": not steps,
        "same random samples, same windows": same_seed_same,
        "other random samples, other windows": seeds_differ,
    }
    failed = [name for name, ok in parts.items() if not ok]
    verdict = Verdict.FAILS if failed else Verdict.HOLDS
    detail = "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in parts.items())
    return Finding(
        verdict,
        f"FractionalMaxPool2d(2) of 10×13 to 5×7 (α = 2.0 and 1.83): {detail}"
        + (f" ({steps})" if steps else ""),
    )


def _window_starts(idx, width, k):
    """Window starts read off the indices a strictly increasing ramp gives (its max is a window's
    last element): rows per output row, columns per output column, for every map."""
    rows, cols = idx // width - (k - 1), idx % width - (k - 1)
    return (
        rows[..., :, 0],
        cols[..., 0, :],
        (rows == rows[..., :, :1]).all() and (cols == cols[..., :1, :]).all(),
    )


def _steps_wrong(starts, n_in, k) -> str:
    n_out = starts.shape[-1]
    alpha = (n_in - k) / (n_out - 1)
    steps = set(starts.diff(dim=-1).flatten().tolist())
    ends_ok = bool((starts[..., 0] == 0).all() and (starts[..., -1] == n_in - k).all())
    allowed = {int(alpha), -int(-alpha // 1)}
    if ends_ok and steps <= allowed and (len(steps) == 2 or alpha.is_integer()):
        return ""
    return (
        f"in {n_in} → {n_out}: starts step by {sorted(steps)} (α = {alpha:.3g}), "
        f"first at 0 and last at {n_in - k}: {ends_ok}"
    )


def check_fractional_max_pool(device):
    g = generator(device, 12)
    h, w, k = 10, 13, 2
    x = torch.randn(2, 3, h, w, generator=g, device=device)
    ramp = torch.arange(h * w, dtype=torch.float32, device=device).view(1, 1, h, w).expand(2, 3, h, w)

    def pooled(inp, samples):
        pool = nn.FractionalMaxPool2d(k, output_size=(5, 7), return_indices=True, _random_samples=samples)
        return pool(inp)

    samples_a = torch.rand(2, 3, 2, generator=g, device=device)
    samples_b = torch.rand(2, 3, 2, generator=g, device=device)
    out_a, idx_a = pooled(x, samples_a)
    out_a2, idx_a2 = pooled(x, samples_a)
    out_b, idx_b = pooled(x, samples_b)
    row_starts, col_starts, separable = _window_starts(pooled(ramp, samples_a)[1], w, k)
    truth = torch.stack(
        [
            torch.stack(
                [
                    torch.stack(
                        [
                            torch.stack(
                                [x[n, c, r : r + k, q : q + k].max() for q in col_starts[n, c].tolist()]
                            )
                            for r in row_starts[n, c].tolist()
                        ]
                    )
                    for c in range(3)
                ]
            )
            for n in range(2)
        ]
    )
    steps = "; ".join(s for s in (_steps_wrong(row_starts, h, k), _steps_wrong(col_starts, w, k)) if s)
    return judge_fractional_max_pool(
        shapes_ok=tuple(out_a.shape) == (2, 3, 5, 7),
        windows_ok=bool(separable) and torch.equal(truth, out_a),  # a max picks an element: exact
        steps=steps,
        same_seed_same=torch.equal(idx_a, idx_a2) and torch.equal(out_a, out_a2),
        seeds_differ=not torch.equal(idx_a, idx_b),
    )


POOLING = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.pooling",
    tier=3,
    claim="FractionalMaxPool2d max-pools kH×kW regions with a stochastic step; LPPool returns the "
    "norm of each window.",
    source="001 Pooling layer",
    claims=(
        Claim(
            "fractional_max_pool",
            "FractionalMaxPool2d : … the max-pooling is applied in kH * kW regions by stochastic step.",
            "001",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "lp_pool",
            "LPPool : return the norm of the current feature vector.",
            "001",
            ClaimKind.CORRECTNESS,
            reading="LPPool2d returns each window's p-norm (Σ|x|^p)^(1/p), on inputs of either sign",
        ),
    ),
    checks={
        "lp_pool_window_norm": Check(check_lp_pool, claim="lp_pool"),
        "fractional_max_pool_stochastic_step": Check(check_fractional_max_pool, claim="fractional_max_pool"),
    },
    verdict=FromFindings(),
)
