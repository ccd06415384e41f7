"""Perf lint: each optimized variant run once under ``torch.cuda.set_sync_debug_mode("error")``.

A host-device synchronisation hidden in an "optimized" variant (``.item()``, ``nonzero``, a
boolean-mask index, a ``.cpu()``) stalls the CPU until the GPU drains its queue: the launch
pipeline empties and every later kernel starts late. It does not change results, so the checks
cannot see it; this lint can. What it finds is recorded with the file and line (the ``measured``
entry of the results JSON, and a warning in the test summary) rather than failed: some
optimized variants must synchronise (a data-dependent output shape), and the report says which.
"""

from __future__ import annotations

import functools
import os
import traceback
import warnings

import pytest
import torch

from cases.spec import Role
from plan import oversize_reason, select_points

CASES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cases")


class HiddenSyncWarning(UserWarning):
    pass


def _where(exc: BaseException) -> str:
    """The innermost frame in cases/ (the variant's own line), else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if os.path.abspath(f.filename).startswith(CASES_DIR)]
    frame = (ours or frames)[-1]
    return f"{os.path.relpath(frame.filename)}:{frame.lineno} ({frame.line})"


@select_points(lambda p: p.device == "cuda" and p.variant.role is Role.OPTIMIZED)
def test_perf_lint(variant_point, input_cache, record_property):
    point = variant_point
    if reason := oversize_reason(point, input_cache):
        pytest.skip(reason)
    if not hasattr(torch.cuda, "set_sync_debug_mode"):
        pytest.skip("this torch has no torch.cuda.set_sync_debug_mode")
    inputs, _ = input_cache.get(point)
    call = functools.partial(point.variant.fn, *inputs)
    call()  # lazy initialisation (cuBLAS handles, workspaces) may synchronise once: not the variant's
    torch.cuda.synchronize(point.device)
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    found = None
    try:
        call()
    except RuntimeError as exc:
        if "synchroniz" not in str(exc):
            raise
        found = f"{str(exc).splitlines()[0]} at {_where(exc)}"
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    torch.cuda.synchronize(point.device)
    record_property("measured", {"hidden_sync": found})
    if found:
        warnings.warn(HiddenSyncWarning(f"{point.id}: {found}"), stacklevel=1)
