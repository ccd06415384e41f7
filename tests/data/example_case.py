"""`example.row_sums`: a row's sum by a Python loop over its columns against one reduction, timed
side by side. The worked example of docs/add-a-case.md, whose copy of this module
tests/unit/properties/test_add_a_case_example.py holds equal to it; it is not a catalogue ID, so the
suite never collects it."""

from __future__ import annotations

import torch

from cases._lib.inputs import generator
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import Case, Claim, ClaimKind, Tol, naive, optimized
from harness.contract.rules import Faster

FP32 = torch.float32


def make_inputs(size, dtype, device, seed):
    g = generator(device, seed)
    return (torch.randn((size["rows"], size["cols"]), generator=g, device=device).to(dtype),)


def column_loop(x):
    total = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
    for j in range(x.shape[1]):
        total += x[:, j]
    return total


def one_sum(x):
    return x.sum(dim=1)


def row_sums_float64(x):
    return x.double().sum(dim=1)


CASE = Case(
    id="example.row_sums",
    tier=2,
    claim="One reduction sums a matrix's rows faster than a Python loop over its columns, and equally.",
    source="(a worked example: docs/add-a-case.md)",
    make_inputs=make_inputs,
    variants={"loop": naive(column_loop, claim="equal"), "sum": optimized(one_sum, claim="equal")},
    oracle=row_sums_float64,
    # A recursive sum of n terms is off by at most (n-1)·u·Σ|x| (Higham, Accuracy and Stability,
    # §4.2); standard normal terms give Σ|x| < 4n: (4n²)·u, whatever order the reduction adds in.
    tolerance={FP32: lambda s: Tol(atol=4 * s["cols"] ** 2 * U[FP32])},
    sizes={
        "quick": [{"rows": 1024, "cols": c} for c in (16, 128)],
        "full": [{"rows": 65536, "cols": c} for c in (64, 512, 4096)],
    },
    x="cols",
    bytes_moved=lambda s, b: s["rows"] * s["cols"] * b,  # the minimum: read x once
    claims=(
        Claim(
            "faster",
            "avoid Python loops over a tensor's elements: one reduction is faster",
            "000",
            ClaimKind.SPEED,
            reading="x.sum(dim=1) is faster than adding the columns one by one in a Python loop",
        ),
        Claim(
            "equal",
            "one reduction gives the same sums",
            "000",
            ClaimKind.CORRECTNESS,
            reading="both ways equal the float64 row sums within the recursive-summation bound",
        ),
    ),
    # The declaration of the timed pair: `sum` against `loop`, side by side, deciding `faster`.
    verdict=Faster(fast="sum", slow="loop", claim="faster"),
)
