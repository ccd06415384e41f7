"""Perf lint: each optimized variant on CUDA run once with host-device synchronisation made an
error (harness.measure.sync_lint). What it finds is recorded with the file and line (the ``measured``
entry of the results JSON, and a warning in the test summary) rather than failed: some optimized
variants must synchronise (a data-dependent output shape), and the report says which.
"""

from __future__ import annotations

import functools
import os
import warnings

import pytest
import torch

import cases
from cases.spec import Role
from harness.measure import sync_lint
from plan import oversize_reason, select_points

CASES_DIR = os.path.dirname(os.path.abspath(cases.__file__))


@select_points(lambda p: p.device == "cuda" and p.variant.role is Role.OPTIMIZED)
def test_perf_lint(variant_point, input_cache, record_property):
    point = variant_point
    if reason := oversize_reason(point, input_cache):
        pytest.skip(reason)
    if not hasattr(torch.cuda, "set_sync_debug_mode"):
        pytest.skip("this torch has no torch.cuda.set_sync_debug_mode")
    inputs, _ = input_cache.get(point)
    found = sync_lint.hidden_sync(functools.partial(point.variant.fn, *inputs), point.device, CASES_DIR)
    record_property("measured", {"hidden_sync": found})
    if found:
        warnings.warn(sync_lint.HiddenSyncWarning(f"{point.id}: {found}"), stacklevel=1)
