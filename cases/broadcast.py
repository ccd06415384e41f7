"""Broadcasting: the rules (notes 002 "broadcast", 004 "广播") and the outer products built on them
(004: AlphaFold's MSA → pair representation).

The notes' rules (002): (1) every tensor has at least one dimension; (2) walking the dimensions from
the last one, each pair is equal, or one of them is 1, or one of them does not exist. The check
holds rule (2) against `torch.broadcast_shapes`, `numpy.broadcast_shapes` and a real elementwise op
on hundreds of Hypothesis shape pairs, and asks whether rule (1) is still true.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from cases._lib.inputs import generator
from cases._lib.properties import run_property, smallest
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


def notes_broadcast(a: tuple, b: tuple) -> tuple | None:
    """The notes' two rules, literally: the result shape, or None where they forbid it."""
    if len(a) == 0 or len(b) == 0:
        return None  # rule 1: "每个Tensor至少有一个维度"
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else None
        y = b[-i] if i <= len(b) else None
        if x is None or y is None:
            out.append(y if x is None else x)
        elif x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(reversed(out))


def _torch_shape(a, b):
    try:
        return tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        return None


def _numpy_shape(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _op_shape(a, b, device):
    try:
        return tuple((torch.ones(a, device=device) + torch.ones(b, device=device)).shape)
    except RuntimeError:
        return None


_shape = st.lists(st.integers(0, 4), max_size=4).map(tuple)
shape_pairs = st.one_of(
    st.tuples(_shape, _shape),  # mostly incompatible
    mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4).map(
        lambda s: s.input_shapes
    ),
)


def check_rules(device):
    counts = {"compatible": 0, "incompatible": 0, "zero_dim": 0, "mismatch": 0}

    def prop(pair):
        a, b = pair
        torch_shape, numpy_shape = _torch_shape(a, b), _numpy_shape(a, b)
        # The truth: torch's shape rule, numpy's and a real elementwise op agree.
        assert torch_shape == numpy_shape == _op_shape(a, b, device), (a, b, torch_shape, numpy_shape)
        if len(a) == 0 or len(b) == 0:
            counts["zero_dim"] += 1  # rule 1's ground: `zero_dim` decides it
            return
        counts["mismatch"] += notes_broadcast(a, b) != torch_shape
        counts["compatible" if torch_shape is not None else "incompatible"] += 1

    run = run_property(shape_pairs, prop)
    rule2_cex = smallest(
        shape_pairs, lambda p: len(p[0]) > 0 and len(p[1]) > 0 and notes_broadcast(*p) != _torch_shape(*p)
    )
    if rule2_cex is not None:
        notes, torch_says = notes_broadcast(*rule2_cex), _torch_shape(*rule2_cex)
        run = f"{run}; smallest pair rule 2 gets wrong: {rule2_cex}, notes {notes}, torch {torch_says}"
    return judge_rules(counts, run)


def judge_rules(counts: dict, run: str) -> Finding:
    """The technique is rule 2, the trailing alignment: it holds when it gave torch's shape (or
    torch's refusal) on every pair with dimensions and both outcomes were seen."""
    mismatch = counts.get("mismatch", 0)
    both = counts["compatible"] > 0 and counts["incompatible"] > 0
    return Finding(
        Verdict.HOLDS if both and mismatch == 0 else Verdict.FAILS,
        f"{run}: rule 2 (trailing alignment; equal, 1 or missing) disagreed with torch.broadcast_shapes, "
        f"numpy.broadcast_shapes and a real add on {mismatch} of {counts['compatible']} compatible and "
        f"{counts['incompatible']} incompatible pairs (incompatible ones raise in all three)"
        + ("" if both else ": NOT both outcomes seen, the property proves nothing"),
    )


# Pairs with a 0-dim tensor: with another 0-dim one, with 1-D, with n-D, and with a shape that
# has a 0-size dimension.
ZERO_DIM_PAIRS = (((), ()), ((), (3,)), ((4, 1, 2), ()), ((), (0, 5)))


def check_zero_dim(device):
    """Rule 1, tried: what torch.broadcast_shapes and a real add do with a 0-dim tensor."""
    seen = []
    for a, b in ZERO_DIM_PAIRS:
        shape, op = _torch_shape(a, b), _op_shape(a, b, device)
        assert shape == op == _numpy_shape(a, b), (a, b, shape, op)  # the three truths agree
        seen.append((a, b, shape))
    return judge_zero_dim(seen)


def judge_zero_dim(seen: list[tuple]) -> Finding:
    """The notes list "每个Tensor至少有一个维度" among "broadcast的条件", the conditions a pair must
    meet (rule 2 beside it says 必须): a pair with a 0-dim tensor does not broadcast. `seen`:
    (shape a, shape b, the broadcast shape or None where torch refused). Fails where a pair with a
    0-dim tensor broadcast; holds where every such pair was refused. (PyTorch's broadcasting page
    long stated the same condition.)"""
    broadcast = [(a, b, s) for a, b, s in seen if s is not None]
    return Finding(
        Verdict.FAILS if broadcast else Verdict.HOLDS,
        (
            f"{len(broadcast)} of {len(seen)} pairs with a 0-dim tensor broadcast: "
            + "; ".join(f"{a} with {b} → {s}" for a, b, s in broadcast)
            + " (a 0-dim tensor acts as a scalar; 004's own numpy list shows d.shape () among "
            "broadcastable arrays)"
        )
        if broadcast
        else f"every pair with a 0-dim tensor was refused: {[(a, b) for a, b, _ in seen]}",
    )


def check_notes_examples(device):
    """004's numpy outer sum/product example, and the AlphaFold outer sum feature ⊕ feature."""
    a = torch.tensor([0.0, 10.0, 20.0, 30.0], device=device)
    b = torch.tensor([1.0, 2.0, 3.0], device=device)
    outer_sum = torch.tensor([[1.0, 2, 3], [11, 12, 13], [21, 22, 23], [31, 32, 33]], device=device)
    outer_prod = torch.tensor([[0.0, 0, 0], [10, 20, 30], [20, 40, 60], [30, 60, 90]], device=device)
    printed = torch.equal(a[:, None] + b, outer_sum) and torch.equal(a.reshape(-1, 1) * b, outer_prod)
    printed = printed and torch.equal(torch.outer(a, b), outer_prod)
    g = torch.Generator().manual_seed(0)
    feature = torch.randn((5, 3), generator=g).to(device)  # (r, c_z)
    pair = feature[None, :, :] + feature[:, None, :]  # (1, r, c) + (r, 1, c) → (r, r, c)
    loop = torch.stack([torch.stack([feature[i] + feature[j] for j in range(5)]) for i in range(5)])
    # 004's list of broadcastable arrays: the shape each line states beside the array it writes.
    stated = (
        ("b.shape is (1,6)   `a=np.array([[1,2,3,4,5]])`", (1, 6), np.array([[1, 2, 3, 4, 5]]).shape),
        ("c.shape is (6.)    `a=np.array([1,2,3,4,5])`", (6,), np.array([1, 2, 3, 4, 5]).shape),
        (
            "a.shape is (5,1)   `a=np.array([[1],[2],[3],[4],[5]])`",
            (5, 1),
            np.array([[1], [2], [3], [4], [5]]).shape,
        ),
        ("d.shape is ()      `a=np.array(2)`", (), np.array(2).shape),
    )
    return judge_notes_examples(
        printed,
        tuple(pair.shape),
        torch.equal(pair, loop),
        [(q, want, got) for q, want, got in stated if want != got],
    )


def judge_notes_examples(
    printed: bool, pair_shape: tuple, pair_equals_loop: bool, wrong_shapes: list = ()
) -> Finding:
    """The notes' outer sum/product arrays, and (1,r,c)+(r,1,c) as AlphaFold's pair representation
    equal to a double loop. `wrong_shapes`: (quote, stated, actual) for each array of 004's list whose
    stated shape is not the shape of the array written beside it: shape slips (the stated shapes
    are those of the broadcasting example the list copies, (5,1), (1,6), (6,) and (); the arrays
    written beside them have 5 elements and are all named `a`), errata deciding nothing."""
    holds = printed and pair_shape == (5, 5, 3) and pair_equals_loop
    errata = tuple(
        Erratum(ErratumKind.SHAPE_SLIP, quote, f"the array written there has shape {got}, not {want}")
        for quote, want, got in wrong_shapes
    )
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"the notes' outer sum/product arrays {'reproduce exactly' if printed else 'do NOT reproduce'}; "
        f"(1,r,c)+(r,1,c) gives shape {pair_shape}, "
        + ("equal to a double loop" if pair_equals_loop else "NOT equal to a double loop"),
        errata,
    )


BROADCAST_RULES = Case(
    id="broadcast.rules",
    tier=3,
    claim="Two tensors broadcast when each has at least one dim and, from the trailing dim, each pair is "
    "equal, or one is 1, or one is missing.",
    source="002 broadcast; 004 广播",
    claims=(
        Claim(
            "trailing_rule",
            "迭代维度尺寸时，从尾部开始，依次每个维度尺寸必须满足一下条件之一： - 相等 - "
            "其中一个tensor的维度为1 - 其中一个tensor的维度不存在",
            "002",
            ClaimKind.BEHAVIOUR,
            reading="two shapes with at least one dimension each broadcast exactly when, aligned from "
            "the last dimension, every pair is equal, or one is 1, or one is missing (and the result "
            "takes the larger): torch.broadcast_shapes, numpy's and a real add agree on every pair",
        ),
        Claim(
            "at_least_one_dim",
            "broadcast的条件： 1. 每个Tensor至少有一个维度",
            "002",
            ClaimKind.BEHAVIOUR,
            reading="a condition for broadcasting: a pair in which a tensor has no dimension (0-dim) "
            "does not broadcast",
        ),
        Claim(
            "outer_examples",
            "outer operation like outer sum or outer product … a[:, np.newaxis] + b … a.reshape(-1,1) * b … "
            "feature $\\oplus$ feature = (1,r,$c_z$) + (r,1,$c_z$) … "
            "output : pair-representation (r,r,$c_z$)",
            "004",
            ClaimKind.CORRECTNESS,
            reading="the transcript's outer sum and product print as shown (run in torch), and "
            "(1,r,c_z) + (r,1,c_z) gives the (r,r,c_z) outer sum of a feature matrix with itself",
        ),
    ),
    checks={
        "rules": Check(check_rules, claim="trailing_rule"),
        "zero_dim": Check(check_zero_dim, claim="at_least_one_dim"),
        "notes_examples": Check(check_notes_examples, claim="outer_examples"),
    },
)


# ---- outer product mean: loops vs broadcasting vs einsum ----------------------------------------


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
