"""Outer products by broadcasting (notes 004: AlphaFold's MSA → pair representation): loops vs
broadcasting vs einsum, the memory the broadcast materialises, and that broadcasting an op makes no
copies of its operands."""

from __future__ import annotations

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
    Tol,
    Verdict,
    library,
    naive,
    optimized,
)
from harness import measure
from harness.contract.rules import AllOf, Faster, Lighter
from harness.measure import device as harness_device

FP32 = torch.float32


def make_msa(size, dtype, device, seed):
    g = generator(device, seed)
    shape = (size["s"], size["r"], size["c"])
    return tuple(torch.randn(shape, generator=g, device=device).to(dtype) for _ in range(2))


def outer_loop(a, b):
    # r² Python iterations, each a (c, s)·(s, c) GEMM: the interpreter, not the FPU, is the cost.
    s, r, c = a.shape
    out = a.new_empty((r, r, c, c))
    for i in range(r):
        for j in range(r):
            out[i, j] = a[:, i, :].T @ b[:, j, :]
    return out / s


def outer_broadcast(a, b):
    # (s, r, 1, c, 1) * (s, 1, r, 1, c) materialises s·r²·c² products before the mean reduces them:
    # s times the output's size, written and read once more.
    return (a[:, :, None, :, None] * b[:, None, :, None, :]).mean(0)


def outer_einsum(a, b):
    # One (r·c, s)·(s, r·c) GEMM: 2·s·r²·c² flops, only the output is written.
    return torch.einsum("sic,sjd->ijcd", a, b) / a.shape[0]


def outer_float64(a, b):
    s, r, c = a.shape
    a64 = a.double().permute(1, 2, 0).reshape(r * c, s)
    b64 = b.double().permute(1, 2, 0).reshape(r * c, s)
    return (a64 @ b64.T / s).reshape(r, c, r, c).permute(0, 2, 1, 3)


def check_notes_outer(device):
    """004's AlphaFold outer product as its shapes say: column i of an MSA as (s, 1, c_m) times
    column j as (s, c_m, 1), against torch.outer of the two columns, sequence by sequence."""
    g = torch.Generator().manual_seed(1)
    s, r, c = 3, 4, 5
    msa = torch.randn((s, r, c), generator=g).to(device)
    i, j = 1, 2
    got = msa[:, i, :].reshape(s, 1, c) * msa[:, j, :].reshape(s, c, 1)
    outer = torch.stack([torch.outer(msa[n, i], msa[n, j]) for n in range(s)])
    # One product per element on both sides: equal bit for bit, no rounding to bound.
    return judge_notes_outer(
        tuple(got.shape),
        bool(got.shape == outer.shape and torch.equal(got, outer)),
        bool(got.shape == outer.shape and torch.equal(got, outer.transpose(1, 2))),
        (s, c),
    )


def judge_notes_outer(shape: tuple, equals_outer: bool, equals_transposed: bool, sc: tuple) -> Finding:
    """The notes: MSA[:,i,:] ⊗ MSA[:,j,:] = (s,1,c_m) * (s,c_m,1). Holds where the broadcast
    product is the (s, c_m, c_m) outer product of the two columns per sequence, in either order of
    its two channel axes (the notes fix no order; the evidence says which one it is: the (1, c_m)
    factor, column i, lands on the last axis, so the product is (MSA_i ⊗ MSA_j)ᵀ). Fails where
    the product is not an outer product at all (e.g. an elementwise product of shape (s, 1, c_m))."""
    s, c = sc
    holds = tuple(shape) == (s, c, c) and (equals_outer or equals_transposed)
    # The notes write ⊗ (the outer product, i by j) and shapes that give it transposed: the intent
    # is plain, so the operands' order is a shape slip, recorded, and the claim judged repaired.
    errata = (
        (
            Erratum(
                ErratumKind.SHAPE_SLIP,
                "MSA[:,i,:] $\\otimes$ MSA [:,j,:] = (s,1,$c_m$) * (s,$c_m$,1)",
                "(s,1,c_m) * (s,c_m,1) puts column i on the last axis: (MSA_i ⊗ MSA_j)ᵀ; "
                "(s,c_m,1) * (s,1,c_m) gives MSA_i ⊗ MSA_j",
                file="004",
            ),
        )
        if holds and equals_transposed and not equals_outer
        else ()
    )
    order = (
        "equal to torch.outer(MSA_i, MSA_j) per sequence"
        if equals_outer
        else "equal to torch.outer(MSA_j, MSA_i), i.e. (MSA_i ⊗ MSA_j)ᵀ, per sequence (the outer "
        "product with its channel axes swapped)"
        if equals_transposed
        else "NOT an outer product of the two columns"
    )
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"(s,1,c_m) * (s,c_m,1) with s = {s}, c_m = {c} gives shape {tuple(shape)}, {order}; AlphaFold's "
        "pair representation then takes the mean over s and a Linear c_m² → c_z, which the notes' line "
        "leaves out",
        errata,
    )


def _allocated_bytes(fn, device) -> int:
    """Bytes allocated while `fn` runs: the CUDA allocator's peak above what was live before, or on
    the CPU the profiler's allocation events summed (frees not subtracted: every byte asked for)."""
    if device.type == "cuda":
        gpu = harness_device.of(device)
        gpu.synchronize()
        base = gpu.memory_allocated()
        gpu.reset_peak_memory()
        out = fn()
        gpu.synchronize()
        peak = gpu.max_memory_allocated() - base
        del out
        return peak
    from torch.profiler import ProfilerActivity

    with measure.profiled(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
    del out
    return sum(
        e.nbytes()
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.nbytes() > 0 and e.device_type() == torch.autograd.DeviceType.CPU
    )


def check_no_copies(device):
    """A column (n, 1) plus a row (1, m), and times it: the bytes allocated against the (n, m)
    output's, and against the same op on the operands expanded into copies first."""
    n = m = 512
    g = torch.Generator().manual_seed(4)
    col, row = torch.randn((n, 1), generator=g).to(device), torch.randn((1, m), generator=g).to(device)
    out_bytes = n * m * col.element_size()
    seen = {
        "add": _allocated_bytes(lambda: col + row, device),
        "mul": _allocated_bytes(lambda: col * row, device),
    }
    copied = _allocated_bytes(lambda: col.expand(n, m).contiguous() + row.expand(n, m).contiguous(), device)
    return judge_no_copies(seen, out_bytes, copied)


def judge_no_copies(seen: dict, out_bytes: int, copied: int) -> Finding:
    """The notes: broadcasting works "without making needless copies of data". `seen`: bytes
    allocated by each broadcast op of a column and a row; `out_bytes`: its (n, m) output's;
    `copied`: the same op on operands expanded into copies first (what needless copies cost, here
    three outputs' worth). Holds where no broadcast op allocated more than its output (an allocator
    rounds a block up by at most one page, 4 KiB, which `out_bytes` of 1 MiB dwarfs: no slack
    needed beyond it); fails where one allocated a copy's worth more."""
    page = 4096
    over = {op: b for op, b in seen.items() if b > out_bytes + page}
    return Finding(
        Verdict.FAILS if over else Verdict.HOLDS,
        "bytes allocated: "
        + ", ".join(f"{op} {b}" for op, b in seen.items())
        + f" for an output of {out_bytes}"
        + (f": MORE than the output in {', '.join(over)}" if over else ": the output alone")
        + f"; the operands expanded into copies first: {copied}",
    )


def _out_bytes(s, b):
    return s["r"] ** 2 * s["c"] ** 2 * b


BROADCAST_OUTER = Case(
    id="broadcast.outer",
    tier=2,
    claim="Outer products by broadcasting (AlphaFold's MSA → pair representation) replace Python loops; "
    "the notes' quote warns broadcasting can waste memory — einsum computes the same without the s·r²·c² "
    "temporary.",
    source="004 广播 (AlphaFold outer product / outer sum)",
    make_inputs=make_msa,
    variants={
        # The notes' per-pair product over every (i, j) with the mean over s (AlphaFold's outer
        # product mean, without its Linear): the suite's computation for the timings; the notes'
        # own formula is `notes_outer`'s.
        "loop": naive(outer_loop, peak_bytes=lambda s, b: _out_bytes(s, b)),
        "broadcast": optimized(outer_broadcast, peak_bytes=lambda s, b: (s["s"] + 1) * _out_bytes(s, b)),
        "einsum": library(outer_einsum, peak_bytes=lambda s, b: 2 * _out_bytes(s, b)),
    },
    oracle=outer_float64,
    # Means of s products of N(0,1) values: entries ≈ 1/√s with mixed signs, and a sum of s
    # terms in any order is off by ~u·√s of its terms' size, near-zero entries included: a floor
    # of 2u·√s at the entries' scale. bf16: the products (broadcast) and the result are rounded
    # to bf16, u each, relative; the rounded products add 4u at the scale.
    tolerance={
        FP32: lambda s: Tol(rtol=8 * U[FP32], floor=2 * U[FP32] * s["s"] ** 0.5),
        torch.bfloat16: Tol(rtol=2 * U[torch.bfloat16], floor=4 * U[torch.bfloat16]),
    },
    dtypes={"cpu": (FP32,), "cuda": (FP32, torch.bfloat16)},
    sizes={
        "quick": [{"s": 16, "r": r, "c": 8} for r in (8, 16, 32)],
        "full": [{"s": 64, "r": r, "c": 32} for r in (32, 64, 128, 256)],
    },
    x="r",
    claims=(
        Claim(
            "outer_product",
            "AlphaFold MSA column-wise to pair-representation (outer product) … "
            "MSA[:,i,:] $\\otimes$ MSA [:,j,:] = (s,1,$c_m$) * (s,$c_m$,1)",
            "004",
            ClaimKind.CORRECTNESS,
            reading="the broadcast product of the two columns is their (s, c_m, c_m) outer product, "
            "sequence by sequence; the shapes as written give it transposed, a shape slip recorded "
            "as an erratum and repaired",
        ),
        Claim(
            "vectorized",
            "Broadcasting provides a means of vectorizing array operations so that looping occurs in C "
            "instead of Python",
            "004",
            ClaimKind.SPEED,
            reading="the outer products of every column pair (with AlphaFold's mean over s) by one "
            "broadcast product are faster than a Python loop over the pairs",
        ),
        Claim(
            "no_copies",
            "It does this without making needless copies of data",
            "004",
            ClaimKind.MEMORY,
            reading="an elementwise op of a column (n, 1) and a row (1, m) allocates its (n, m) output "
            "and nothing more: the operands are not expanded into copies",
        ),
        Claim(
            "memory_waste",
            "There are, however, cases where broadcasting is a bad idea because it leads to inefficient use "
            "of memory that slows computation.",
            "004",
            ClaimKind.MEMORY,
            reading="here the broadcast's s·r²·c² temporary makes it both heavier and slower than the "
            "same result without it (einsum: one GEMM)",
        ),
    ),
    checks={
        "notes_outer": Check(check_notes_outer, claim="outer_product"),
        "no_copies": Check(check_no_copies, claim="no_copies"),
    },
    verdict=AllOf(
        (
            Faster("broadcast", "loop", claim="vectorized"),
            AllOf((Lighter("einsum", "broadcast"), Faster("einsum", "broadcast")), claim="memory_waste"),
        )
    ),
    flops=lambda s: 2 * s["s"] * s["r"] ** 2 * s["c"] ** 2,
    bytes_moved=lambda s, b: (2 * s["s"] * s["r"] * s["c"] + s["r"] ** 2 * s["c"] ** 2) * b,
)
