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
from harness.contract.rules import AllOf, Faster, Lighter

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
    counts = {"compatible": 0, "incompatible": 0, "zero_dim": 0, "zero_dim_broadcast": 0, "mismatch": 0}

    def prop(pair):
        a, b = pair
        torch_shape, numpy_shape = _torch_shape(a, b), _numpy_shape(a, b)
        # The truth: torch's shape rule, numpy's and a real elementwise op agree.
        assert torch_shape == numpy_shape == _op_shape(a, b, device), (a, b, torch_shape, numpy_shape)
        if len(a) == 0 or len(b) == 0:
            counts["zero_dim"] += 1
            counts["zero_dim_broadcast"] += torch_shape is not None
            return
        counts["mismatch"] += notes_broadcast(a, b) != torch_shape
        counts["compatible" if torch_shape is not None else "incompatible"] += 1

    run = run_property(shape_pairs, prop)
    rule2_cex = smallest(
        shape_pairs, lambda p: len(p[0]) > 0 and len(p[1]) > 0 and notes_broadcast(*p) != _torch_shape(*p)
    )
    zero_cex = smallest(
        shape_pairs, lambda p: (len(p[0]) == 0 or len(p[1]) == 0) and _torch_shape(*p) is not None
    )
    if rule2_cex is not None:
        notes, torch_says = notes_broadcast(*rule2_cex), _torch_shape(*rule2_cex)
        run = f"{run}; smallest pair rule 2 gets wrong: {rule2_cex}, notes {notes}, torch {torch_says}"
    return judge_rules(
        counts,
        run,
        f"{zero_cex} broadcasts to {_torch_shape(*zero_cex)}; ones(()) + ones(3) has shape "
        f"{_op_shape((), (3,), device)}; {counts['zero_dim_broadcast']} of {counts['zero_dim']} drawn pairs "
        "with a 0-dim tensor broadcast"
        if zero_cex is not None
        else "",
    )


def judge_rules(counts: dict, run: str, zero_dim_cex: str) -> Finding:
    """The technique is rule 2, the trailing alignment: it holds when it gave torch's shape (or
    torch's refusal) on every pair with dimensions and both outcomes were seen.

    Rule 1 ("每个Tensor至少有一个维度") is listed among "broadcast的条件", the conditions a pair
    must meet (rule 2 beside it says 必须), so it reads as necessary: where 0-dim tensors broadcast,
    a wrong statement, an erratum deciding nothing. PyTorch's broadcasting page long stated the same
    rule, with the same necessary reading ("not broadcastable, because x does not have at least 1
    dimension"); its current page no longer lists it."""
    errata = ()
    if zero_dim_cex:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "broadcast的条件：1. 每个Tensor至少有一个维度",
                f"0-dim tensors broadcast: {zero_dim_cex} (004's own numpy example lists d.shape () "
                "among broadcastable arrays)",
            ),
        )
    mismatch = counts.get("mismatch", 0)
    both = counts["compatible"] > 0 and counts["incompatible"] > 0
    return Finding(
        Verdict.HOLDS if both and mismatch == 0 else Verdict.FAILS,
        f"{run}: rule 2 (trailing alignment; equal, 1 or missing) disagreed with torch.broadcast_shapes, "
        f"numpy.broadcast_shapes and a real add on {mismatch} of {counts['compatible']} compatible and "
        f"{counts['incompatible']} incompatible pairs (incompatible ones raise in all three)"
        + ("" if both else ": NOT both outcomes seen, the property proves nothing"),
        errata,
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
    stated shape is not the shape of the array written beside it: errata, deciding nothing."""
    holds = printed and pair_shape == (5, 5, 3) and pair_equals_loop
    errata = tuple(
        Erratum(
            ErratumKind.WRONG_SHAPE_OR_FORMULA, quote, f"the array written there has shape {got}, not {want}"
        )
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
            "迭代维度尺寸时，从尾部开始，依次每个维度尺寸必须满足一下条件之一：相等 / "
            "其中一个tensor的维度为1 / "
            "其中一个tensor的维度不存在",
            "002",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "outer_examples",
            "outer operation like outer sum or outer product: a[:, np.newaxis] + b … a.reshape(-1,1) * b; "
            "feature ⊕ feature = (1,r,c_z) + (r,1,c_z), output (r,r,c_z)",
            "004",
            ClaimKind.CORRECTNESS,
        ),
    ),
    # Rule 1 ("每个Tensor至少有一个维度") is a statement `rules` finds false: an erratum, no claim.
    checks={
        "rules": Check(check_rules, claim="trailing_rule"),
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
        "loop": naive(outer_loop, peak_bytes=lambda s, b: _out_bytes(s, b), claim="outer_product"),
        "broadcast": optimized(
            outer_broadcast, peak_bytes=lambda s, b: (s["s"] + 1) * _out_bytes(s, b), claim="outer_product"
        ),
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
            "AlphaFold MSA column-wise to pair-representation (outer product): "
            "MSA[:,i,:] ⊗ MSA [:,j,:] = (s,1,c_m) * (s,c_m,1)",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "vectorized",
            "Broadcasting provides a means of vectorizing array operations so that looping occurs in C "
            "instead of Python",
            "004",
            ClaimKind.SPEED,
        ),
        Claim(
            "memory_waste",
            "There are, however, cases where broadcasting is a bad idea because it leads to inefficient use "
            "of memory that slows computation.",
            "004",
            ClaimKind.MEMORY,
        ),
    ),
    # The waste shows against the same result computed without the s·r²·c² temporary (einsum).
    verdict=AllOf(
        (
            Faster("broadcast", "loop", claim="vectorized"),
            Lighter("einsum", "broadcast", claim="memory_waste"),
        )
    ),
    flops=lambda s: 2 * s["s"] * s["r"] ** 2 * s["c"] ** 2,
    bytes_moved=lambda s, b: (2 * s["s"] * s["r"] * s["c"] + s["r"] ** 2 * s["c"] ** 2) * b,
)
