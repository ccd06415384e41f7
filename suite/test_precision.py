"""precision.tf32 / precision.amp: the global precision flags are the same after every variant
and check as before (the generic tests cannot see this). That harness.measure.precision_flags restores them
when the code inside raises is its own unit test (tests/unit/harness/measure/test_precision_flags.py)."""

from __future__ import annotations

import pytest
import torch

from cases import get_case
from cases.precision import amp, tf32
from harness.measure import precision_flags as flags
from plan import TopicPoint

VARIANTS = [
    TopicPoint(tf32.CASE.id, n, "test_tf32_variants_leave_flags_unchanged")
    for n in sorted(tf32.CASE.variants)
]
CHECKS = [
    TopicPoint(case.id, name, "test_checks_leave_flags_unchanged")
    for case in (tf32.CASE, amp.CASE)
    for name in case.checks
    if "cpu" in case.checks[name].devices
]


@pytest.mark.parametrize("point", VARIANTS, ids=[p.id for p in VARIANTS])
def test_tf32_variants_leave_flags_unchanged(point):
    variant = tf32.CASE.variants[point.name]
    maker = variant.inputs or tf32.CASE.make_inputs
    inputs = maker({"n": 64}, torch.float32, torch.device("cpu"), 0)
    before = flags.snapshot()
    variant.fn(*inputs)
    assert flags.snapshot() == before


@pytest.mark.parametrize("point", CHECKS, ids=[p.id for p in CHECKS])
def test_checks_leave_flags_unchanged(point):
    before = flags.snapshot()
    get_case(point.case).checks[point.name].fn(torch.device(point.device))
    assert flags.snapshot() == before
