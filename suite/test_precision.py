"""precision.tf32 / precision.amp: the global precision flags are the same after every variant
and check as before (the generic tests cannot see this). That harness.precision_flags restores them
when the code inside raises is its own unit test (tests/test_precision_flags.py)."""

from __future__ import annotations

import pytest
import torch

from cases.precision import amp, tf32
from harness import precision_flags as flags

TF32_VARIANTS = sorted(tf32.CASE.variants)
CHECKS = [
    (case, name)
    for case in (tf32.CASE, amp.CASE)
    for name in case.checks
    if "cpu" in case.checks[name].devices
]


@pytest.mark.parametrize("name", TF32_VARIANTS, ids=[f"precision.tf32-{n}" for n in TF32_VARIANTS])
def test_tf32_variants_leave_flags_unchanged(name):
    variant = tf32.CASE.variants[name]
    maker = variant.inputs or tf32.CASE.make_inputs
    inputs = maker({"n": 64}, torch.float32, torch.device("cpu"), 0)
    before = flags.snapshot()
    variant.fn(*inputs)
    assert flags.snapshot() == before


@pytest.mark.parametrize("case,name", CHECKS, ids=[f"{c.id}-{n}" for c, n in CHECKS])
def test_checks_leave_flags_unchanged(case, name):
    before = flags.snapshot()
    case.checks[name].fn(torch.device("cpu"))
    assert flags.snapshot() == before
