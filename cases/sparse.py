"""Sparse COO and CSR vs dense storage: memory and matmul time against density (notes 004
"torch.sparse": "unless a tensor is very large and very sparse, contiguous storage is efficient").

Bytes for an n×k fp32 matrix with nnz non-zeros: dense 4·n·k; COO 8·2·nnz (int64 indices,
(ndim, nnz)) + 4·nnz = 20·nnz, so COO is smaller below density 4/20 = 0.2; CSR 8·(n+1) + 8·nnz
+ 4·nnz ≈ 12·nnz, smaller below ≈ 1/3. The time crossover is measured: sparse kernels do indexed,
irregular work per non-zero where the dense GEMM streams at peak flops, so it lies far lower.
"""

from __future__ import annotations

import math

import torch

from cases._lib.inputs import generator
from cases._lib.timing import median_time
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import Case, Check, Finding, InputFamily, Tol, Verdict, naive, optimized
from harness import load, measure
from harness.rules import FromFindings

FP32 = torch.float32


def make_dense(size, dtype, device, seed):
    g = generator(device, seed)
    n, k, m = size["n"], size["k"], size["m"]
    mask = torch.rand((n, k), generator=g, device=device) < size["density_permille"] / 1000
    a = torch.randn((n, k), generator=g, device=device) * mask
    b = torch.randn((k, m), generator=g, device=device)
    return a.to(dtype), b.to(dtype)


def make_coo(size, dtype, device, seed):
    a, b = make_dense(size, dtype, device, seed)
    return a.to_sparse().coalesce(), b


def make_csr(size, dtype, device, seed):
    a, b = make_dense(size, dtype, device, seed)
    return a.to_sparse_csr(), b


def _as_zeros(a, b):
    """The same matrix with no non-zero at all (nnz = 0), in the layout it came in."""
    zeros = torch.zeros(a.shape, dtype=a.dtype, device=a.device)
    if a.layout == torch.sparse_coo:
        zeros = zeros.to_sparse().coalesce()
    elif a.layout == torch.sparse_csr:
        zeros = zeros.to_sparse_csr()
    return zeros, b


INPUT_FAMILIES = {
    "all_zero_matrix": InputFamily(_as_zeros),  # empty values and indices: a zero product
    "one_column": InputFamily(resize=lambda s: {**s, "m": 1}),  # a sparse matrix times a vector
}


def dense_mm(a, b):
    return a @ b


def coo_mm(a, b):
    return torch.sparse.mm(a, b)


def csr_mm(a, b):
    return a @ b


def product_float64(a, b):
    return a.to_dense().double() @ b.double()


def storage_bytes(a) -> int:
    """Bytes of every tensor that holds the matrix (indices and values, or the dense block)."""
    if a.layout == torch.sparse_coo:
        parts = (a.indices(), a.values())
    elif a.layout == torch.sparse_csr:
        parts = (a.crow_indices(), a.col_indices(), a.values())
    else:
        parts = (a,)
    return sum(p.numel() * p.element_size() for p in parts)


def check_coo_layout(device):
    a, _ = make_coo({"n": 64, "k": 48, "m": 1, "density_permille": 100}, FP32, device, seed=0)
    nnz = a._nnz()
    assert a.indices().dtype == torch.int64 and a.indices().shape == (2, nnz)
    assert a.values().shape == (nnz,) and a.values().dtype == FP32
    csr = a.to_sparse_csr()
    assert csr.crow_indices().shape == (65,) and csr.col_indices().shape == (nnz,)
    return Finding(
        Verdict.HOLDS,
        f"COO indices int64 of shape (ndim, nse) = (2, {nnz}), values ({nnz},) in the "
        f"value dtype, as stated; CSR: crow (n+1,), col (nnz,), values (nnz,)",
    )


def _crossover(densities, ratios):
    """Density where sparse/dense crosses 1 going up, interpolated in log-log; None if never."""
    for (d0, r0), (d1, r1) in zip(zip(densities, ratios), zip(densities[1:], ratios[1:])):
        if r0 <= 1 < r1:
            t = (0 - math.log(r0)) / (math.log(r1) - math.log(r0))
            return math.exp(math.log(d0) + t * (math.log(d1) - math.log(d0)))
    if ratios[0] > 1:
        return 0.0  # sparse never wins on this grid
    return None  # sparse wins everywhere on the grid


def check_crossover(device):
    """Memory and matmul-time crossover densities at one size on this device."""
    n = 512 if device.type == "cpu" else 8192
    densities = [0.001, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5]
    rows = []
    for d in densities:
        size = {"n": n, "k": n, "m": 64, "density_permille": d * 1000}
        dense = make_dense(size, FP32, device, seed=0)
        coo, csr = (dense[0].to_sparse().coalesce(), dense[1]), (dense[0].to_sparse_csr(), dense[1])
        truth = product_float64(*dense)
        for fn, inputs in ((coo_mm, coo), (csr_mm, csr)):
            err = measure.within_tol(fn(*inputs), truth, product_tolerance(size))
            assert err.within, f"sparse product off at density {d}: {err.worst}"
        t_dense, t_coo, t_csr = (
            median_time(lambda f=f, i=i: f(*i), device)
            for f, i in ((dense_mm, dense), (coo_mm, coo), (csr_mm, csr))
        )
        rows.append(
            (d, storage_bytes(dense[0]), storage_bytes(coo[0]), storage_bytes(csr[0]), t_dense, t_coo, t_csr)
        )
    # Bytes are linear in nnz: the crossover from the two measured points around it. COO's r = 20·nnz/4n²
    # is a power law, exact in log-log: 4/20 = 0.2 up to nnz's binomial noise (0.4/n); CSR's 12 bytes
    # plus the row pointer's 8(n+1): 0.332 at n = 512. Each interval excludes the next index layout
    # (COO at 16 or 24 bytes per nnz: 0.25, 0.167; CSR at 8 or 16: 0.5, 0.25).
    mem_coo = _crossover(densities, [r[2] / r[1] for r in rows])
    mem_csr = _crossover(densities, [r[3] / r[1] for r in rows])
    assert mem_coo is not None and 0.15 < mem_coo < 0.25, f"COO memory crossover {mem_coo} (20 bytes per nnz)"
    assert mem_csr is not None and 0.28 < mem_csr < 0.38, f"CSR memory crossover {mem_csr} (12 bytes per nnz)"
    time_coo = _crossover(densities, [r[5] / r[4] for r in rows])
    time_csr = _crossover(densities, [r[6] / r[4] for r in rows])
    time_best = _crossover(densities, [min(r[5], r[6]) / r[4] for r in rows])
    table = "; ".join(
        f"{d:g}: dense {td * 1e3:.2f} ms, coo {tc * 1e3:.2f}, csr {tr * 1e3:.2f}"
        for d, _, _, _, td, tc, tr in rows
    )
    return judge_crossover(
        f"{n}×{n} fp32 times {n}×64 on {device.type}",
        mem_coo,
        mem_csr,
        time_coo,
        time_csr,
        time_best,
        table,
        busy=load.measure(probe_s=0).busy_reason(),
    )


def judge_crossover(where, mem_coo, mem_csr, time_coo, time_csr, time_best, table, busy=None) -> Finding:
    """The notes: sparse storage pays only for very sparse tensors, dense is efficient otherwise.
    Borne out where sparse wins at the grid's lowest density and loses at its highest, in bytes
    and in matmul time (for the better of COO and CSR): a crossover inside the grid, whose
    density the evidence names. A crossover density is 0.0 where sparse never wins on the grid,
    None where it never loses. The time crossover from a machine that was `busy` (the load probe's
    reason) is reported but decides nothing: beside two CPU burners it was found at 0.2 in one
    run and not at all in the next."""

    def turns(x):
        return x is not None and x > 0.0

    fmt = lambda x: "never on this grid" if x == 0.0 else ("above 0.5" if x is None else f"{x:.3g}")  # noqa: E731
    memory_turns = turns(mem_coo) and turns(mem_csr)
    time_turns = turns(time_best)
    if busy:
        verdict = Verdict.DEPENDS
    elif memory_turns and time_turns:
        verdict = Verdict.HOLDS
    elif memory_turns or time_turns:
        verdict = Verdict.DEPENDS
    else:
        verdict = Verdict.FAILS
    return Finding(
        verdict,
        f"{where}: memory crossover COO {fmt(mem_coo)}, CSR {fmt(mem_csr)} (20 and 12 bytes per "
        f"non-zero vs 4 dense); matmul-time crossover (sparse slower above) COO {fmt(time_coo)}, "
        f"CSR {fmt(time_csr)}, the better of the two {fmt(time_best)}"
        + (
            f"; the times, taken on a {busy}, decide nothing"
            if busy
            else ""
            if verdict is Verdict.HOLDS
            else "; in " + ("time" if memory_turns else "memory") + " no crossover"
        )
        + f". Medians: {table}",
    )


# Outputs are sums over k ≤ 16384 products (density·k of them non-zero) of N(0,1) values, of
# scale √(density·k) ≤ 70 and any sign: in any summation order a sum of K terms is off by ~u·√K of
# the terms' size, on small outputs as on large ones, so the bound is a floor at the output's
# scale, 2u·√k (k = 16384: 256u = 1.5e-5; an H100 measured 19u of max|truth| at n = k = 16384,
# density 0.3: 4e-4 absolute on outputs of scale 357). cuBLAS computes fp32 GEMMs in IEEE fp32
# unless allow_tf32 or float32_matmul_precision say otherwise (a TF32 product would be off by
# ~1e-3 and fail here, as it should); the dense GEMM is not wrapped in ieee_fp32, whose ~100 µs
# of flag bookkeeping would swamp its time at the quick sizes.
def product_tolerance(size) -> Tol:
    return Tol(rtol=8 * U[FP32], floor=2 * U[FP32] * size["k"] ** 0.5)


def _metrics(name, inputs, device):
    return {"storage_bytes": storage_bytes(inputs[0])}


CASE = Case(
    id="sparse.storage",
    tier=2,
    claim="Sparse COO/CSR storage pays only for very large, very sparse tensors; otherwise dense is "
    "efficient.",
    source="004 torch.sparse",
    make_inputs=make_dense,
    variants={
        "dense": naive(dense_mm),
        "coo": optimized(coo_mm, inputs=make_coo),
        "csr": optimized(csr_mm, inputs=make_csr),
    },
    oracle=product_float64,
    tolerance={FP32: product_tolerance},
    sizes={
        "quick": [{"n": 1024, "k": 1024, "m": 64, "density_permille": d} for d in (1, 10, 100, 300)],
        "full": [{"n": 16384, "k": 16384, "m": 256, "density_permille": d} for d in (1, 3, 10, 30, 100, 300)],
    },
    x="density_permille",
    checks={"coo_layout": Check(check_coo_layout), "crossover": Check(check_crossover)},
    input_families=INPUT_FAMILIES,
    verdict=FromFindings(),
    metrics=_metrics,
    flops=lambda s: 2 * s["n"] * s["k"] * s["m"],
)
