"""Broadcasting's rules (notes 002 "broadcast", 004 "广播").

The notes' rules (002): (1) every tensor has at least one dimension; (2) walking the dimensions from
the last one, each pair is equal, or one of them is 1, or one of them does not exist. The check
holds rule (2) against `torch.broadcast_shapes`, `numpy.broadcast_shapes` and a real elementwise op
on hundreds of Hypothesis shape pairs, and asks whether rule (1) is still true; and the notes'
outer sum/product examples print as shown.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from cases._lib.properties import run_property, smallest
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    Verdict,
)

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
