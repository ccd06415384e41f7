"""The notes' hand-written LayerNorm (004 "广播 / Layer Normalization", from the Annotated
Transformer) against `nn.LayerNorm`. They are not the same function:

    notes:        y = a·(x − μ) / (s + ε₁) + b,      s² = Σ(x − μ)² / (D − 1)   (unbiased std, ε added to std)
    nn.LayerNorm: y = γ·(x − μ) / √(σ² + ε₂) + β,     σ² = Σ(x − μ)² / D         (biased variance, ε inside √)

With a = γ, b = β and σ = √(Σ(x − μ)²/D), so s = σ·√(D/(D − 1)), the exact relation is

    y_notes − b = (y_ln − β) · √(σ² + ε₂) / (σ·√(D/(D − 1)) + ε₁),

which tends to √((D − 1)/D) as ε₁, ε₂ → 0: the notes' output is the library's shrunk by that factor
(0.99902 for D = 512), plus an ε term that matters only when σ is small. `notes_layernorm` checks
this to float64 round-off and measures how far the two are apart, D by D, against the fp32 bound.

The timed variants both compute nn.LayerNorm's function: the notes' step-by-step structure with the
variance and ε corrected (three passes over x), and the fused `F.layer_norm`.
"""

from __future__ import annotations

import math

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
from harness.contract.rules import FromFindings
from notes import parse

FP32 = torch.float32
NOTES_LAYERNORM = "004#7"


def notes_layernorm() -> type:
    """004's LayerNorm class (`# step by step LayerNorm`, a block quoted in the note), read from the
    notes package with its docstring line indented like the body: the IndentationError as written
    is the notes' snippets check's erratum."""
    code = parse.snippet_text(NOTES_LAYERNORM)
    code = code.replace('\n   """input', '\n        """input')
    scope = {"torch": torch, "nn": torch.nn}
    exec(code, scope)  # noqa: S102 - the notes' own text
    return scope["LayerNorm"]


def _affine(d, dtype, device, seed):
    g = generator(device, seed + 1)
    w = 1.0 + 0.1 * torch.randn(d, generator=g, device=device)
    b = 0.1 * torch.randn(d, generator=g, device=device)
    return w.to(dtype), b.to(dtype)


def make_inputs(size, dtype, device, seed):
    g = generator(device, seed)
    x = (3.0 + 2.0 * torch.randn((size["rows"], size["d"]), generator=g, device=device)).to(dtype)
    return (x, *_affine(size["d"], dtype, device, seed))


EPS = 1e-5


def manual(x, w, b):
    # Three passes over x (mean, variance, normalise) and two (rows, 1) temporaries: 3 reads of
    # rows·D elements and one write, where the fused kernel reads twice (Welford) and writes once.
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + EPS) * w + b


def fused(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b, EPS)


def layernorm_float64(x, w, b):
    x64 = x.double()
    mean = x64.sum(-1, keepdim=True) / x.shape[-1]
    var = ((x64 - mean) ** 2).sum(-1, keepdim=True) / x.shape[-1]
    return (x64 - mean) / (var + EPS).sqrt() * w.double() + b.double()


# Feature sizes the notes' class is compared with nn.LayerNorm at: from the smallest row that has
# an unbiased std to rows past where the two come within fp32 rounding of each other.
DIMS = (2, 64, 512, 4096, 16384, 32768, 65536)
# The quick profile's row count, for the case's fp32 tolerance at each D.
CASE_SIZE = {"rows": 2048}


def check_notes_layernorm(device):
    """The notes' class (from the note file) against nn.LayerNorm with the same affine, in float64
    so that rounding plays no part: how far apart they are at each D, against the fp32 bound the
    case holds a LayerNorm to; and, at D = 512, the exact relation between the two."""
    cls = notes_layernorm()
    rows = []
    for d in DIMS:
        x, w, b = make_inputs({"rows": 4, "d": d}, torch.float64, device, seed=3)
        notes = cls(d).to(device=device, dtype=torch.float64)
        library_ln = torch.nn.LayerNorm(d).to(device=device, dtype=torch.float64)
        with torch.no_grad():
            notes.a_2.copy_(w), notes.b_2.copy_(b)
            library_ln.weight.copy_(w), library_ln.bias.copy_(b)
            y_notes, y_ln = notes(x), library_ln(x)
            gap = ((y_notes - y_ln).abs().max() / (y_ln - b).abs().max()).item()
        # The case's fp32 bound at D, its relative term and its floor (a fraction of the output's
        # scale) together: the most a correct fp32 LayerNorm may be off, as a fraction of the scale.
        tol = CASE.tolerance[FP32](CASE_SIZE | {"d": d})
        rows.append((d, gap, tol.rtol + tol.floor))
        if d != 512:
            continue
        with torch.no_grad():
            sigma = x.var(-1, keepdim=True, unbiased=False).sqrt()
            predicted = b + (y_ln - b) * (sigma**2 + library_ln.eps).sqrt() / (
                sigma * math.sqrt(d / (d - 1)) + notes.eps
            )
            rel = ((y_notes - predicted).abs().max() / y_notes.abs().max()).item()
            # ε → 0: a pure rescaling by √((D−1)/D).
            notes.eps, library_ln.eps = 0.0, 0.0
            ratio = ((notes(x) - b) / (library_ln(x) - b)).flatten()
            ratio_err = (ratio - math.sqrt((d - 1) / d)).abs().max().item()
    return judge_layer_norm(rel, ratio_err, rows, small_scale(cls, device))


# A row spread this little (activations late in a deep net, or scaled down by a small init) is where
# the two ε placements part: √(σ² + ε₂) against σ + ε₁.
SMALL_SIGMA = 1e-3


def small_scale(cls, device) -> tuple[float, int, float, float]:
    """(σ, D, gap, bound) at the largest D, the input scaled to σ = SMALL_SIGMA: the rows where the
    unbiased std's factor no longer matters, so any gap left is the ε term's."""
    d = DIMS[-1]
    x, w, b = make_inputs({"rows": 4, "d": d}, torch.float64, device, seed=3)
    x = (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True, unbiased=False) * SMALL_SIGMA
    notes = cls(d).to(device=device, dtype=torch.float64)
    library_ln = torch.nn.LayerNorm(d).to(device=device, dtype=torch.float64)
    with torch.no_grad():
        notes.a_2.copy_(w), notes.b_2.copy_(b)
        library_ln.weight.copy_(w), library_ln.bias.copy_(b)
        y_ln = library_ln(x)
        gap = ((notes(x) - y_ln).abs().max() / (y_ln - b).abs().max()).item()
    tol = CASE.tolerance[FP32](CASE_SIZE | {"d": d})
    return SMALL_SIGMA, d, gap, tol.rtol + tol.floor


# float64 round-off of the relation's two sides: each is a few dozen roundings of O(1) values
# (mean and variance over D = 512 terms, a square root, a division): ≲ 64·2⁻⁵³ ≈ 7e-15 relative,
# held to 1e-12; the ε = 0 ratio divides two such values whose distance from b can be as small as
# 1e-4 of their scale, so its bound is 1e4 times looser, 1e-9.
RELATION_BOUND, RATIO_BOUND = 1e-12, 1e-9


def judge_layer_norm(
    rel: float, ratio_err: float, rows: list[tuple], small: tuple[float, int, float, float] | None = None
) -> Finding:
    """The notes' class as layer normalization: at the same a_2, b_2 (γ, β), nn.LayerNorm's output.
    `rel`, `ratio_err`: how far the notes' output is from the exact relation
    y_notes − b = (y_ln − b)·√(σ²+ε_ln)/(σ·√(D/(D−1)) + ε_notes) and, with ε = 0, from the factor
    √((D−1)/D) (float64, D = 512); `rows`: (D, the largest gap |y_notes − y_ln| relative to the
    output's scale, the fp32 bound a LayerNorm is held to at D).

    Fails where the relation does not hold (the class computes something else) or the gap is
    outside the bound at every D; holds where it is inside at every D; depends on D where it is
    inside only from some D on (the factor √((D−1)/D) of the unbiased std tends to 1). `small`: (σ,
    D, gap, bound) with the rows scaled to a small σ; outside the bound there, the class is layer
    normalization only for rows spread well beyond √ε, and the verdict depends on the input's scale
    too."""
    relation, ratio = rel <= RELATION_BOUND, ratio_err <= RATIO_BOUND
    inside = [d for d, gap, bound in rows if gap <= bound]
    outside = [d for d, gap, bound in rows if gap > bound]
    scale_apart = small is not None and small[2] > small[3]
    if not (relation and ratio) or not inside:
        verdict = Verdict.FAILS
    elif outside or scale_apart:
        verdict = Verdict.DEPENDS
    else:
        verdict = Verdict.HOLDS
    gaps = "; ".join(
        f"D={d}: {gap:.2g} ({'inside' if gap <= bound else 'OUTSIDE'} {bound:.2g})" for d, gap, bound in rows
    )
    conditions = []
    if verdict is Verdict.DEPENDS and outside:
        conditions.append(f"on D: within fp32 rounding of nn.LayerNorm only from D = {min(inside)}")
    if verdict is Verdict.DEPENDS and scale_apart:
        sigma, d, gap, bound = small
        conditions.append(
            f"on the input's scale: rows with σ = {sigma:g} at D = {d} are {gap:.2g} of the output apart "
            f"(OUTSIDE {bound:.2g}), ε added to the std against nn.LayerNorm's inside the root"
        )
    turn = "depends " + " and ".join(conditions) + "; " if conditions else ""
    return Finding(
        verdict,
        turn + "the notes' LayerNorm divides by the unbiased std plus ε, so its output is nn.LayerNorm's "
        "scaled by √((D−1)/D) (0.7071 at D=2, 0.99902 at D=512) plus an ε term: the relation "
        f"{'holds' if relation else 'FAILS'} to {rel:.1e} and the ε = 0 factor "
        f"{'holds' if ratio else 'FAILS'} to {ratio_err:.1e} (float64, D=512); gap to nn.LayerNorm "
        f"relative to the output's scale against the fp32 bound: {gaps}. Trained, a_2 can learn the "
        "factor back; nn.LayerNorm / F.layer_norm compute the standard function",
    )


def _constant_rows(x, w, b):
    # Every row one value (its first): σ = 0, so the output is b exactly, whatever ε.
    return x[:, :1].expand_as(x).contiguous(), w, b


def _offset(x, w, b):
    # μ ≈ 2¹⁰ + 3 with σ = 2 (+2¹⁰ is exact at these magnitudes): |μ|/σ ≈ 500, where the bound's
    # derivation assumes |x| ≤ 6σ.
    return x + 2.0**10, w, b


INPUT_FAMILIES = {
    "constant_rows": InputFamily(
        _constant_rows,
        fails={
            "manual": "mean() of D equal fp32 values is off by a few u·|x| (the sum rounds), so "
            "x − μ is that residue instead of 0 and rsqrt(0 + ε) multiplies it by 1/√ε ≈ 316: "
            "measured 3.6e-4 from b, where F.layer_norm returns b to the bound (its Welford mean "
            "of equal values is exact); the bound, 16u of the outputs' scale (here |b| ≤ 0.26), "
            "assumes σ ≫ √ε",
        },
    ),
    "large_mean": InputFamily(
        _offset,
        fails={
            name: "μ itself rounds to u·|μ| in fp32 and x − μ inherits it: u·|μ|/σ ≈ 500u of one "
            "output unit, in both variants (measured 3.2e-5 manual, 3.7e-5 fused, of the outputs' "
            "scale, against ~2e-6): fp32 LayerNorm's documented loss for |μ| ≫ σ, not the manual "
            "form's"
            for name in ("manual", "layer_norm")
        },
    ),
    "one_feature": InputFamily(resize=lambda s: {**s, "d": 1}),  # σ = 0 with nothing to round: b
}


CASE = Case(
    id="layernorm.manual",
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("layer_norm", "manual"),),
    tier=2,
    claim="The step-by-step LayerNorm (mean, unbiased std, a·(x−μ)/(std+ε)+b) is layer normalization.",
    source="004 广播 / Layer Normalization",
    make_inputs=make_inputs,
    # `manual` is the notes' step-by-step structure with nn.LayerNorm's variance and ε inside the
    # root, not the notes' class: it and the fused F.layer_norm are timed as context, deciding no
    # claim (`notes_layernorm` judges the notes' own class).
    variants={"manual": naive(manual), "layer_norm": library(fused)},
    oracle=layernorm_float64,
    # σ comes from sums of D terms: ≲ u·√D relative, and every output's distance from b
    # scales with 1/σ, so relative (rtol, ×2). x − μ cancels |x| ≤ 12 = 6σ: ~6u of one unit of
    # output, plus the affine's roundings: a floor of 16u at the output's scale (≈ 4.5).
    # bf16 (manual): μ, x − μ, σ², its rsqrt, ·w and +b are each rounded to bf16, ≤ 4u relative
    # in all; μ's rounding (u·|μ| = 3u) shifts outputs by 1.5u of one unit: floor 4u.
    tolerance={
        FP32: lambda s: Tol(rtol=2 * U[FP32] * s["d"] ** 0.5, floor=16 * U[FP32]),
        torch.bfloat16: Tol(rtol=4 * U[torch.bfloat16], floor=4 * U[torch.bfloat16]),
    },
    dtypes={"cpu": (FP32,), "cuda": (FP32, torch.bfloat16)},
    sizes={
        "quick": [{"rows": 2048, "d": d} for d in (64, 512, 2048)],
        "full": [{"rows": 65536, "d": d} for d in (256, 1024, 4096, 8192)],
    },
    x="d",
    claims=(
        Claim(
            "layer_norm",
            "4. Layer Normalization … # step by step LayerNorm … mean = x.mean(-1, keepdim=True) "
            "… std = x.std(-1, keepdim=True) … return self.a_2 * (x - mean) / (std + self.eps) + self.b_2",
            "004",
            ClaimKind.CORRECTNESS,
            reading="the notes' class is layer normalization: with a_2, b_2 as γ, β it gives "
            "nn.LayerNorm's output, within the fp32 rounding a LayerNorm is held to",
        ),
    ),
    checks={"notes_layernorm": Check(check_notes_layernorm, claim="layer_norm")},
    input_families=INPUT_FAMILIES,
    verdict=FromFindings(),
    bytes_moved=lambda s, b: 2 * s["rows"] * s["d"] * b,  # the minimum: read x once, write y once
)
