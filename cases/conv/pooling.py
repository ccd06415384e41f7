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
from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
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


def judge_lp_pool(rel_err: float, bound: float, signed_sum_gap: float) -> Finding:
    """The technique: LPPool2d equals the window's (Σ x^p)^(1/p) within fp32's bound. The notes call
    it "the norm": true for non-negative inputs; with p = 1 on signed inputs it returns Σx, not Σ|x|
    (`signed_sum_gap` is how far the two were apart, relative)."""
    verdict = Verdict.HOLDS if rel_err <= bound else Verdict.FAILS
    errata = ()
    if signed_sum_gap > bound:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "LPPool : return the norm of the current feature vector",
                f"LPPool2d computes (Σ x^p)^(1/p) without |·|: with p=1 on signed inputs it returned Σx, "
                f"{signed_sum_gap:.3g} (relative) away from the 1-norm Σ|x|; a norm only for x ≥ 0 or even p",
            ),
        )
    return Finding(
        verdict,
        f"LPPool2d vs float64 (Σ x^p)^(1/p) over 2×2 windows, p = 2 and 3, x > 0: max relative error "
        f"{rel_err:.2e} (bound {bound:.2e})",
        errata,
    )


def check_lp_pool(device):
    g = generator(device, 11)
    x = 0.1 + torch.rand(2, 3, 8, 10, generator=g, device=device)  # positive: a norm's domain
    # Per window: k² = 4 positive terms x^p (one rounding each), their sum (≤ 3 more, positive
    # terms: no cancellation), ×k² and the p-th root (2 more): ≤ (k² + 4)·u relative before the
    # root, which divides it by p ≥ 2; held to (k² + 4)·u.
    bound = (4 + 4) * U[FP32]
    errs = []
    for p in (2.0, 3.0):
        got = nn.LPPool2d(p, kernel_size=2)(x)
        truth = lp_pool_float64(x, p, 2)
        errs.append(((got.double() - truth).abs() / truth.abs()).max().item())
    signed = torch.randn(2, 3, 8, 10, generator=g, device=device)
    as_sum = nn.LPPool2d(1.0, kernel_size=2)(signed).double()
    one_norm = lp_pool_float64(signed.abs(), 1.0, 2)
    gap = ((as_sum - one_norm).abs().max() / one_norm.abs().max()).item()
    return judge_lp_pool(max(errs), bound, gap)


def judge_fractional_max_pool(
    shapes_ok: bool, values_from_input: bool, same_seed_same: bool, seeds_differ: bool
) -> Finding:
    """FractionalMaxPool2d: the requested output size, every output an input element (a max over
    its window), the same random samples giving the same windows and other samples other windows
    (the stochastic, non-integer step the notes describe)."""
    parts = {
        "output size as requested": shapes_ok,
        "each output is an element of its input": values_from_input,
        "same random samples, same windows": same_seed_same,
        "other random samples, other windows": seeds_differ,
    }
    failed = [name for name, ok in parts.items() if not ok]
    verdict = Verdict.FAILS if failed else Verdict.HOLDS
    detail = "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in parts.items())
    return Finding(verdict, f"FractionalMaxPool2d(2) of 10×13 to 5×7 (steps 2.0 and 1.86): {detail}")


def check_fractional_max_pool(device):
    g = generator(device, 12)
    x = torch.randn(2, 3, 10, 13, generator=g, device=device)

    def pooled(samples):
        pool = nn.FractionalMaxPool2d(2, output_size=(5, 7), return_indices=True, _random_samples=samples)
        return pool(x)

    samples_a = torch.rand(2, 3, 2, generator=g, device=device)
    samples_b = torch.rand(2, 3, 2, generator=g, device=device)
    out_a, idx_a = pooled(samples_a)
    out_a2, idx_a2 = pooled(samples_a)
    out_b, idx_b = pooled(samples_b)
    gathered = x.flatten(2).gather(2, idx_a.flatten(2)).view_as(out_a)
    return judge_fractional_max_pool(
        shapes_ok=tuple(out_a.shape) == (2, 3, 5, 7),
        values_from_input=torch.equal(gathered, out_a),
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
            "FractionalMaxPool2d : ... the max-pooling is applied in kH * kW regions by stochastic step.",
            "001",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "lp_pool", "LPPool : return the norm of the current feature vector.", "001", ClaimKind.CORRECTNESS
        ),
    ),
    checks={
        "lp_pool_window_norm": Check(check_lp_pool, claim="lp_pool"),
        "fractional_max_pool_stochastic_step": Check(check_fractional_max_pool, claim="fractional_max_pool"),
    },
    verdict=FromFindings(),
)
