"""Pairwise squared Euclidean distance: broadcasting vs the matmul expansion (notes 000/001, 距离计算).

D[i, j] = |x_i - y_j|²  for x: (N, D), y: (M, D).

The notes' "terrible way" broadcasts to an (N, M, D) difference tensor; the expansion
|x|² - 2·x·yᵀ + |y|² does the same with one GEMM and never holds more than the (N, M) output.
The expansion is not free: when x_i ≈ y_j it subtracts two large, nearly equal numbers, so its
absolute error scales with |x|² rather than with the (small) distance. `cancellation` measures that.
"""

from __future__ import annotations

import dataclasses

import torch

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
    optimized,
)
from harness.contract.rules import AllOf, Faster, Lighter
from notes import text as notes_text

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16


def _normal(shape, dtype, g):
    # Drawn in fp32 then cast: every dtype sees the same points, rounded.
    return torch.randn(shape, generator=g, dtype=torch.float32, device=g.device).to(dtype)


def make_points(size, dtype, device, seed):
    g = generator(device, seed)
    return _normal((size["n"], size["d"]), dtype, g), _normal((size["m"], size["d"]), dtype, g)


def make_unit_points(size, dtype, device, seed):
    x, y = make_points(size, torch.float32, device, seed)
    x, y = torch.nn.functional.normalize(x, dim=1), torch.nn.functional.normalize(y, dim=1)
    return x.to(dtype), y.to(dtype)


def make_binary_points(size, dtype, device, seed):
    """0/1 descriptors, as ORB's binary descriptors unpacked to one value per bit."""
    g = generator(device, seed)
    x = torch.randint(0, 2, (size["n"], size["d"]), generator=g, device=device)
    y = torch.randint(0, 2, (size["m"], size["d"]), generator=g, device=device)
    return x.to(dtype), y.to(dtype)


# ---- the variants -------------------------------------------------------------------------------


def broadcast(x, y):
    # Materialises (N, M, D) twice (the difference, then its square): 2·N·M·D elements written
    # and read again by the sum. O(N·M·D) memory; pure bandwidth, no GEMM.
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def matmul(x, y):
    # Reads x and y once for the norms (N + M outputs), once for one GEMM (2·N·M·D flops).
    # addmm writes |y|² - 2·x·yᵀ into the (N, M) output and |x|² is added in place: the only
    # tensor of size N·M is the result itself. The notes' version without a clamp: see
    # `cancellation` for the small negatives that this produces on near-duplicates.
    xx = (x * x).sum(1, keepdim=True)
    yy = (y * y).sum(1)
    return torch.addmm(yy, x, y.T, alpha=-2).add_(xx)


def unit_norm(x, y):
    # For |x| = |y| = 1 the norms are constants: one GEMM and one fused scale-and-shift.
    return (x @ y.T).mul_(-2).add_(2)


def binary(x, y):
    # For 0/1 entries |x|² = Σx: the ORB form from the notes, with the norms shaped as a column
    # (N, 1) and a row (M,) — the notes write both as (N,), which only broadcasts when N == M
    # and is then wrong (see `notes_binary_snippet`).
    return torch.addmm(y.sum(1), x, y.T, alpha=-2).add_(x.sum(1, keepdim=True))


def cdist_mm(x, y):
    return torch.cdist(x, y, compute_mode="use_mm_for_euclid_dist").square()


def cdist_direct(x, y):
    return torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist").square()


def distances_float64(x, y, rows_per_block: int = 64):
    """The truth: the definition Σ_k (x_ik - y_jk)² in float64, in row blocks to bound memory."""
    x64, y64 = x.to(torch.float64), y.to(torch.float64)
    blocks = [((xb[:, None, :] - y64[None, :, :]) ** 2).sum(-1) for xb in x64.split(rows_per_block)]
    return torch.cat(blocks)


def _nm(size, itemsize):
    return size["n"] * size["m"] * itemsize


# ---- edge inputs: every variant checked on them too (tests/integration/test_seeds_and_edges.py) ---


def clustered(x, y):
    """Every pair a near-duplicate: all points within 1e-3·N(0,1) per coordinate of one point x₀,
    so distances ≈ 2·1e-6·D ≈ 5e-4 beside norms |x|² ≈ D = 256. Drawn from the maker's own
    points (x₀ = x[0]; the offsets are x and y scaled), rounded to their dtype as the maker's are."""
    dtype, x, y = x.dtype, x.float(), y.float()
    return (x[0] + 1e-3 * x).to(dtype), (x[0] + 1e-3 * y).to(dtype)


def clustered_unit(x, y):
    """Unit vectors within ~1e-3 of each other: 2 - 2x·y ≈ 2e-6, the unit-norm shortcut's
    cancellation (its norms are the constant 2)."""
    near = clustered(x, y)
    return tuple(torch.nn.functional.normalize(t.float(), dim=1).to(t.dtype) for t in near)


def zero_and_repeated_rows(x, y):
    """0/1 descriptors where every other row is all zeros and y repeats x's rows: distances of
    exactly 0 (ties) and |x|² = 0 terms."""
    x = x.clone()
    x[::2] = 0
    return x, x[torch.arange(y.shape[0], device=x.device) % x.shape[0]]


_CANCELS = (
    "the expansion subtracts |x|² + |y|² ≈ 512 down to distances ≈ 5e-4: error ~u·√D·512 ≈ 5e-4, "
    "the size of the distances themselves (measured: 0.65 of the largest), where the bound at the "
    "truth's own scale is ~2e-9 (`cancellation` bounds it by |x|², and clamp_min(0) avoids the NaN, "
    "not the loss)"
)
INPUT_FAMILIES = {
    "near_duplicates": InputFamily(
        clustered,
        variants=("broadcast", "matmul", "cdist_mm", "cdist_direct"),
        fails={
            "matmul": _CANCELS,
            "cdist_mm": "cdist's use_mm_for_euclid_dist is the same expansion: " + _CANCELS,
        },
    ),
    "near_duplicate_unit_vectors": InputFamily(
        clustered_unit,
        variants=("unit_norm",),
        fails={
            "unit_norm": "2 - 2x·y cancels to distances ≈ 2e-6 from terms of 2: error ~u·√D·2 ≈ 2e-6 "
            "(measured: 0.7 of the largest distance) against a bound of ~5e-12 at the truth's scale"
        },
    ),
    "zero_and_repeated_rows": InputFamily(zero_and_repeated_rows, variants=("binary",)),
    "one_query_point": InputFamily(resize=lambda s: {**s, "m": 1}),
}


# ---- checks beyond "every variant equals the oracle" -----------------------------------------


def check_cancellation(device):
    """Identical and near-duplicate points: the expansion loses what broadcasting keeps.

    Rigorous bound for the expansion in fp32 (Higham, dot products): each of |x|², |y|², x·y is
    off by at most γ_D·(its terms' magnitudes), γ_D = D·u/(1 - D·u), u = 2⁻²⁴, so
    |error| ≤ γ_{D+2}·(|x|² + |y|² + 2|x||y|). A result past that bound means the computation
    did not happen in fp32 (e.g. a silent bf16/TF32 downcast).
    """
    n, d = 512, 256
    x, _ = make_points({"n": n, "m": 1, "d": d}, FP32, device, seed=7)
    g = torch.Generator().manual_seed(8)
    near = x + 1e-3 * torch.randn(x.shape, generator=g).to(device)  # distance ≈ 1e-6·D ≪ |x|²
    u = 2.0**-24
    gamma = (d + 2) * u / (1 - (d + 2) * u)
    observed = []
    for name, y in (("identical", x), ("near-duplicate", near)):
        truth = distances_float64(x, y).diagonal()
        expansion = matmul(x, y).diagonal().double()
        direct = broadcast(x, y).diagonal().double()
        err = (expansion - truth).abs()
        nx, ny = x.double().norm(dim=1), y.double().norm(dim=1)
        bound = gamma * (nx**2 + ny**2 + 2 * nx * ny)
        observed.append(
            {
                "name": name,
                "within_fp32_bound": bool((err <= bound).all()),
                "expansion_err": err.max().item(),
                # x - x is exactly 0 in floating point: broadcasting is exact on identical points.
                "broadcast_err": (direct - truth).abs().max().item(),
                "rel": name != "identical",  # relative to the truth (> 0) for near-duplicates
                "truth_min": truth.min().item(),
                "negative": int((expansion < 0).sum()),
                "nan_after_sqrt": int(expansion.sqrt().isnan().sum()),
                "nan_after_clamp": int(expansion.clamp_min(0).sqrt().isnan().sum()),
            }
        )
    return judge_cancellation(observed, n)


def judge_cancellation(observed: list[dict], n: int) -> Finding:
    """Context (the notes say nothing of it): how much the expansion loses on identical and
    near-duplicate points, where broadcasting keeps it; negatives become NaN after sqrt and
    clamp_min(0) removes them. An error past the fp32 bound means the computation did not happen
    in fp32 (a silent bf16/TF32 downcast): said plainly."""
    lines = []
    for o in observed:
        scale = o["truth_min"] if o["rel"] and o["truth_min"] > 0 else 1.0
        kind = "rel" if o["rel"] else "abs"
        line = (
            f"{o['name']}: expansion error {kind} {o['expansion_err'] / scale:.3g}, broadcast {kind} "
            f"{o['broadcast_err'] / scale:.3g}; {o['negative']}/{n} diagonal entries negative "
            f"({o['nan_after_sqrt']} NaN after sqrt, {o['nan_after_clamp']} after clamp_min(0))"
        )
        if not o["within_fp32_bound"]:
            line += " — PAST the fp32 bound: not computed in fp32"
        lines.append(line)
    return Finding(None, "; ".join(lines))


def check_notes_binary_snippet(device):
    """The notes' ORB line `sum(des_tar, 1) - 2*matmul(des_tar, des_cur.t()) + sum(des_cur,1)`, as
    written, then with |x|² as a column (its shape slip repaired), against float64.

    Both sums are shape (N,), so both broadcast along the *last* axis: for N ≠ M it raises, and
    for N == M it runs and adds |x_j|² where |x_i|² belongs.
    """
    x, y = make_binary_points({"n": 64, "m": 48, "d": 256}, FP32, device, seed=3)
    try:
        torch.sum(x, 1) - 2 * torch.matmul(x, y.t()) + torch.sum(y, 1)
        raised = False
    except RuntimeError:
        raised = True
    x, y = make_binary_points({"n": 64, "m": 64, "d": 256}, FP32, device, seed=3)
    literal = torch.sum(x, 1) - 2 * torch.matmul(x, y.t()) + torch.sum(y, 1)
    truth = distances_float64(x, y)
    wrong = (literal.double() - truth).abs().max().item()
    fixed = (binary(x, y).double() - truth).abs().max().item()
    return judge_binary_snippet(raised, wrong, fixed)


def judge_binary_snippet(raised: bool, literal_err: float, fixed_err: float) -> Finding:
    """The technique: Σx − 2xyᵀ + Σy is the squared distance of 0/1 vectors, exact in fp32 (every
    term is an integer ≤ 256 < 2²⁴): holds where the repaired line is exact, fails otherwise. The
    notes' line as written broadcasts Σx as a row: a shape slip in code whose formula the notes
    state correctly just above it (|x|² − 2xᵀy + |y|², and |x|² = Σx for 0/1 entries), listed
    where it raises or is wrong."""
    errata = ()
    if raised or literal_err > 0:
        errata = (
            Erratum(
                ErratumKind.SHAPE_SLIP,
                "compare = torch.sum(des_tar, 1) - 2*torch.matmul(des_tar, des_cur.t()) + "
                "torch.sum(des_cur,1)",
                f"both sums are shape (N,), so they broadcast along the last axis: raises for N≠M "
                f"({'raised' if raised else 'did not raise'} at 64 vs 48), off by up to {literal_err:.0f} at "
                "N=M=64 (distances ≤ 256); Σx must be a column: torch.sum(des_tar, 1, keepdim=True)",
            ),
        )
        errata = in_each_note(errata[0])
    return Finding(
        Verdict.HOLDS if fixed_err == 0 else Verdict.FAILS,
        f"the binary form with |x|² as a column is exact on 0/1 inputs (max error {fixed_err:g})",
        errata,
    )


def in_each_note(erratum: Erratum) -> tuple[Erratum, ...]:
    """The slip in every note file that has the line (000 and 001 carry the same section): one
    fault per place, each keyed by its own file and line."""
    return tuple(
        dataclasses.replace(erratum, file=prefix)
        for prefix in ("000", "001")
        if notes_text.locate(erratum.quote, prefix)[1]
    )


def check_notes_orientation(device):
    """The notes' broadcast snippet unsqueezes des_tar at 0 and des_cur at 1, so its [i, j] is
    |cur_i - tar_j|², the transpose of the matmul lines' [i, j] = tar_i·cur_j."""
    tar, cur = make_points({"n": 32, "m": 24, "d": 16}, FP32, device, seed=5)
    compare = torch.sum((torch.unsqueeze(tar, 0) - torch.unsqueeze(cur, 1)) ** 2, 2)
    # Distances up to ~4·16 = 64 from 16 products of O(1) values: fp32 error ≲ 16u·64 ≈ 6e-5
    # absolute; held to rtol 1e-5, atol 1e-4 (over it).
    truth = distances_float64(cur, tar)
    same = compare.shape == truth.shape and torch.allclose(compare.double(), truth, rtol=1e-5, atol=1e-4)
    return judge_orientation(same, tuple(compare.shape), (tar.shape[0], cur.shape[0]))


def judge_orientation(same_distances: bool, broadcast_shape: tuple, matmul_shape: tuple) -> Finding:
    """The technique: the notes' "terrible way" computes the pairwise squared distances (against
    float64): holds where it does, fails otherwise. That it returns the transpose of the matmul
    lines' `compare` is a shape slip (des_tar is unsqueezed at 0, where the matmul lines index it
    first), listed where the shapes differ."""
    errata = ()
    if broadcast_shape != matmul_shape:
        errata = (
            Erratum(
                ErratumKind.SHAPE_SLIP,
                "des_tar = torch.unsqueeze(des_tar, 0) # 1*N*256",
                f"the broadcast lines return shape {broadcast_shape} (cur × tar) where the matmul lines "
                f"return {matmul_shape} (tar × cur): the alternatives for `compare` are transposes of each "
                "other; unsqueeze des_tar at 1 and des_cur at 0",
            ),
        )
        errata = in_each_note(errata[0])
    return Finding(
        Verdict.HOLDS if same_distances else Verdict.FAILS,
        f"the broadcast snippet's distances {'equal' if same_distances else 'DIFFER FROM'} float64's "
        f"(shape {broadcast_shape}; the matmul lines' {matmul_shape})",
        errata,
    )


CASE = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="distance.pairwise",
    tier=1,
    claim="The matmul expansion |x|²-2xyᵀ+|y|² is faster and lighter than broadcasting "
    "(x[:,None]-y[None])**2 for pairwise squared distances; 2-2xyᵀ for unit vectors; Σx-2xyᵀ+Σy for binary.",
    source="000, 001 实际编写 / 距离计算",
    make_inputs=make_points,
    variants={
        "broadcast": naive(
            broadcast, peak_bytes=lambda s, b: 2 * s["d"] * _nm(s, b) + _nm(s, b), claim="expansion"
        ),
        "matmul": optimized(matmul, peak_bytes=lambda s, b: _nm(s, b), claim="expansion"),
        "unit_norm": optimized(
            unit_norm, inputs=make_unit_points, peak_bytes=lambda s, b: _nm(s, b), claim="unit_norm"
        ),
        "binary": optimized(
            binary, inputs=make_binary_points, peak_bytes=lambda s, b: _nm(s, b), claim="binary"
        ),
        "cdist_mm": library(cdist_mm, peak_bytes=lambda s, b: 3 * _nm(s, b)),
        # cdist's direct CUDA kernel is dispatched for float/double only.
        "cdist_direct": library(cdist_direct, peak_bytes=lambda s, b: 2 * _nm(s, b), dtypes=(FP32,)),
    },
    oracle=distances_float64,
    # Distances of N(0,1) points in D = 256 are ≈ 2D = 512, of unit vectors ≈ 2, of 0/1 vectors
    # ≈ D/2: every bound is relative to the variant's own truth. Σ(x−y)² adds D terms of one
    # sign, relative error ≲ u·√D on each element (rtol); the expansion subtracts terms as large
    # as |x|² + |y|² ≈ max|truth|, so its cancellation error, u·√D of that, is a floor at the
    # truth's scale. bf16/fp16: each of |x|², x·yᵀ, |y|² and the result is rounded to the dtype
    # (GEMMs accumulate in fp32): 2u relative plus 4u of the scale for the cancellation.
    tolerance={
        FP32: lambda s: Tol(rtol=2 * U[FP32] * s["d"] ** 0.5, floor=2 * U[FP32] * s["d"] ** 0.5),
        BF16: Tol(rtol=2 * U[BF16], floor=4 * U[BF16]),
        FP16: Tol(rtol=2 * U[FP16], floor=4 * U[FP16]),
    },
    dtypes={"cpu": (FP32,), "cuda": (FP32, BF16, FP16)},
    sizes={
        # Broadcast at n = m = 1024, d = 256 holds two 1 GiB fp32 intermediates: the CI ceiling.
        "quick": [{"n": n, "m": n, "d": 256} for n in (128, 256, 512, 1024)],
        # On an H200 broadcast fits up to n = 4096 (32 GiB); the matmul forms go to 32768.
        "full": [{"n": n, "m": n, "d": 256} for n in (1024, 2048, 4096, 8192, 16384, 32768)],
    },
    claims=(
        Claim(
            "expansion",
            r"$$ |\vec{x_{tar}} - \vec{x_{cur}}|^{2} = \vec{x_{tar}}^{T} \vec{x_{tar}} - 2 * "
            r"\vec{x_{tar}}^{T} \vec{x_{cur}} + \vec{x_{cur}}^{T} \vec{x_{cur}} $$ … "
            "compare = torch.sum((des_tar - des_cur)**2, 2) # N*N*256",
            "001",
            ClaimKind.CORRECTNESS,
            reading="the notes' broadcast lines and the expansion |x|² − 2x·yᵀ + |y|² (the formula as code: "
            "the notes give none for real-valued descriptors) equal float64's pairwise squared distances "
            "within fp32's bounds at the distances' scale; on near-duplicate points the expansion keeps no "
            "relative accuracy (input family near_duplicates, and the `cancellation` check)",
        ),
        Claim(
            "unit_norm",
            "# if descriptors are normalized : … compare = 2 - 2*torch.matmul(des_tar, des_cur.t())",
            "001",
            ClaimKind.CORRECTNESS,
            reading="for unit vectors, 2 − 2x·yᵀ equals float64's squared distances within fp32's bounds",
        ),
        Claim(
            "binary",
            "# in ORB situation, the descriptor is binary … "
            "compare = torch.sum(des_tar, 1) - 2*torch.matmul(des_tar, des_cur.t()) + torch.sum(des_cur,1)",
            "001",
            ClaimKind.CORRECTNESS,
            reading="for 0/1 descriptors, Σx − 2x·yᵀ + Σy (Σx as a column: the line's shape slip repaired, "
            "its erratum) equals the squared distances exactly",
        ),
        Claim(
            "faster",
            "# terrible ways:",
            "001",
            ClaimKind.SPEED,
            reading="the broadcast form is slower than the matmul expansion, at the largest size measured",
        ),
        Claim(
            "lighter",
            "# terrible ways: … compare = torch.sum((des_tar - des_cur)**2, 2) # N*N*256",
            "001",
            ClaimKind.MEMORY,
            reading="the broadcast form, which materialises N×M×256, peaks at more memory than the matmul "
            "expansion",
        ),
    ),
    checks={
        # The expansion's cancellation on near-duplicates: measured and reported; the notes say nothing of it.
        "cancellation": Check(check_cancellation),
        "notes_binary_snippet": Check(check_notes_binary_snippet, claim="binary"),
        "notes_orientation": Check(check_notes_orientation, claim="expansion"),
    },
    input_families=INPUT_FAMILIES,
    verdict=AllOf(
        (Faster("matmul", "broadcast", claim="faster"), Lighter("matmul", "broadcast", claim="lighter"))
    ),
    flops=lambda s: 2 * s["n"] * s["m"] * s["d"],
    bytes_moved=lambda s, b: (s["n"] * s["d"] + s["m"] * s["d"] + s["n"] * s["m"]) * b,
)
