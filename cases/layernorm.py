"""The notes' hand-written LayerNorm (004 "广播 / Layer Normalization", from the Annotated
Transformer) against `nn.LayerNorm`. They are not the same function:

    notes:        y = a·(x − μ) / (s + ε₁) + b,      s² = Σ(x − μ)² / (D − 1)   (unbiased std, ε added to std)
    nn.LayerNorm: y = γ·(x − μ) / √(σ² + ε₂) + β,     σ² = Σ(x − μ)² / D         (biased variance, ε inside √)

With a = γ, b = β and σ = √(Σ(x − μ)²/D), so s = σ·√(D/(D − 1)), the exact relation is

    y_notes − b = (y_ln − β) · √(σ² + ε₂) / (σ·√(D/(D − 1)) + ε₁),

which tends to √((D − 1)/D) as ε₁, ε₂ → 0: the notes' output is the library's shrunk by that factor
(0.99902 for D = 512), plus an ε term that matters only when σ is small. `exact_relation` checks
this to float64 round-off and measures how far the two are apart in fp32.

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
    Erratum,
    ErratumKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    library,
    naive,
)
from harness.contract.rules import FromFindings

FP32 = torch.float32


class NotesLayerNorm(torch.nn.Module):
    """The notes' module as written, its docstring's indentation repaired (the slip is an erratum:
    `check_notes_snippet`)."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = torch.nn.Parameter(torch.ones(features))
        self.b_2 = torch.nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


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


def check_exact_relation(device):
    d, rows = 512, 256
    x, w, b = make_inputs({"rows": rows, "d": d}, torch.float64, device, seed=3)
    notes = NotesLayerNorm(d).to(device=device, dtype=torch.float64)
    library_ln = torch.nn.LayerNorm(d).to(device=device, dtype=torch.float64)
    with torch.no_grad():
        notes.a_2.copy_(w), notes.b_2.copy_(b)
        library_ln.weight.copy_(w), library_ln.bias.copy_(b)
        y_notes, y_ln = notes(x), library_ln(x)
        sigma = x.var(-1, keepdim=True, unbiased=False).sqrt()
        predicted = b + (y_ln - b) * (sigma**2 + library_ln.eps).sqrt() / (
            sigma * math.sqrt(d / (d - 1)) + notes.eps
        )
        rel = ((y_notes - predicted).abs().max() / y_notes.abs().max()).item()
        # ε → 0: a pure rescaling by √((D−1)/D).
        notes.eps, library_ln.eps = 0.0, 0.0
        ratio = ((notes(x) - b) / (library_ln(x) - b)).flatten()
        factor = math.sqrt((d - 1) / d)
        ratio_err = (ratio - factor).abs().max().item()
        # What a user sees in fp32 with each module's default ε.
        notes32, ln32 = NotesLayerNorm(d).to(device), torch.nn.LayerNorm(d).to(device)
        x32 = x.float()
        gap = (notes32(x32) - ln32(x32)).abs().max().item()
    return judge_relation(rel, ratio_err, gap, d)


# float64 round-off of the relation's two sides: each is a few dozen roundings of O(1) values
# (mean and variance over D = 512 terms, a square root, a division): ≲ 64·2⁻⁵³ ≈ 7e-15 relative,
# held to 1e-12; the ε = 0 ratio divides two such values whose distance from b can be as small as
# 1e-4 of their scale, so its bound is 1e4 times looser, 1e-9.
RELATION_BOUND, RATIO_BOUND = 1e-12, 1e-9


def judge_relation(rel: float, ratio_err: float, fp32_gap: float, d: int) -> Finding:
    """The technique: the notes' LayerNorm (unbiased std, ε added to the std) normalizes each row,
    and differs from nn.LayerNorm by the exact, predictable relation the catalogue asks for. The
    notes never claim equality with nn.LayerNorm, so the difference is not an erratum; the
    relation failing (the notes' module computing something else) is what fails the technique."""
    factor = math.sqrt((d - 1) / d)
    relation, ratio = rel <= RELATION_BOUND, ratio_err <= RATIO_BOUND
    return Finding(
        Verdict.HOLDS if relation and ratio else Verdict.FAILS,
        "y_notes − b = (y_ln − b)·√(σ²+ε_ln)/(σ·√(D/(D−1)) + ε_notes) "
        f"{'holds' if relation else 'FAILS'} to {rel:.1e} (float64, D={d}, bound {RELATION_BOUND:g}); "
        f"with ε = 0 the factor √((D−1)/D) = {factor:.6f} {'holds' if ratio else 'FAILS'} to "
        f"{ratio_err:.1e}; with the default ε (1e-6 vs 1e-5) the two modules' fp32 outputs differ by "
        f"up to {fp32_gap:.2e}: the notes' LayerNorm is a layer normalization, not nn.LayerNorm's",
    )


# 004's class as written (the "> " quote markers removed, nothing else): its docstring line is
# indented three spaces, under the `def` at four.
_NOTES_LAYERNORM = """
class LayerNorm(nn.Module):
    "Construct a layernorm module (See citation for details)."

    def __init__(self, features, eps=1e-6):
   \"\"\"input : (N,L,B),B=features\"\"\"
        super(LayerNorm, self).__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)

        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2
"""


def check_notes_snippet(device):
    """The notes' LayerNorm compiled as written, then with its docstring line indented like the
    body: the repaired class must equal `NotesLayerNorm` (the case's copy) bit for bit."""
    try:
        compile(_NOTES_LAYERNORM, "<notes 004>", "exec")
        error = ""
    except SyntaxError as exc:  # IndentationError is a SyntaxError
        error = f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    scope = {"torch": torch, "nn": torch.nn}
    exec(_NOTES_LAYERNORM.replace('\n   """input', '\n        """input'), scope)  # noqa: S102
    x, _, _ = make_inputs({"rows": 8, "d": 16}, FP32, device, seed=1)
    with torch.no_grad():
        same = torch.equal(scope["LayerNorm"](16).to(device)(x), NotesLayerNorm(16).to(device)(x))
    return judge_notes_snippet(error, same)


def judge_notes_snippet(compile_error: str, repaired_equals_case: bool) -> Finding:
    """The snippet not compiling as written (an indentation slip) is a typo of the notes, an
    erratum; what decides is that the repaired class is the module the case judges."""
    errata = ()
    if compile_error:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                '   """input : (N,L,B),B=features"""',
                f"{compile_error} as written: the docstring is indented 3 spaces under a `def` at 4",
            ),
        )
    return Finding(
        Verdict.HOLDS if repaired_equals_case else Verdict.FAILS,
        (
            "does not compile as written (" + compile_error + "); "
            if compile_error
            else "compiles as written; "
        )
        + "repaired, its forward "
        + ("equals" if repaired_equals_case else "DIFFERS FROM")
        + " the step-by-step LayerNorm judged here, bit for bit",
        errata,
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
    tier=2,
    claim="The step-by-step LayerNorm (mean, unbiased std, a·(x−μ)/(std+ε)+b) is layer normalization.",
    source="004 广播 / Layer Normalization",
    make_inputs=make_inputs,
    # `manual` is the notes' step-by-step structure with nn.LayerNorm's variance and ε: it decides the
    # step-by-step computation's correctness; the fused F.layer_norm is context.
    variants={"manual": naive(manual, claim="step_by_step"), "layer_norm": library(fused)},
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
            "# step by step LayerNorm … return self.a_2 * (x - mean) / (std + self.eps) + self.b_2",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "step_by_step",
            "mean = x.mean(-1, keepdim=True); std = x.std(-1, keepdim=True) "
            "[LayerNorm computed step by step]",
            "004",
            ClaimKind.CORRECTNESS,
        ),
    ),
    checks={
        "exact_relation": Check(check_exact_relation, claim="layer_norm"),
        "notes_snippet": Check(check_notes_snippet, claim="layer_norm"),
    },
    input_families=INPUT_FAMILIES,
    verdict=FromFindings(),
    bytes_moved=lambda s, b: 2 * s["rows"] * s["d"] * b,  # the minimum: read x once, write y once
)
