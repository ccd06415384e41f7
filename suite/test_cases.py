"""The three generic tests every case gets from its declaration.

* ``test_check``: each variant equals the oracle within the dtype's tolerance and leaves its inputs as
  they were (harness.mutation); ``test_benchmark`` checks the same again after its timed calls.
* ``test_benchmark``: each variant timed by pytest-benchmark (device-synchronized), with its peak
  memory, error and cost model in ``extra_info``; an out-of-memory size is recorded and skipped.
* ``test_rule``: each rule check of the case, with its finding on the notes' claim recorded.
"""

from __future__ import annotations

import pytest
import torch

from cases.spec import Role, dtype_name, tolerance_at
from harness import record, variant_benchmark
from harness.variant_benchmark import NotMeasured, VariantAtPoint, WrongAnswer
from plan import oversize_reason, select_points
from suite import options
from suite.progress_plugin import progress


def _at_point(point, input_cache) -> VariantAtPoint:
    comparison, variant = point.comparison, point.variant
    itemsize = torch.empty((), dtype=point.dtype).element_size()
    twin = variant.role is Role.COMPILED
    compiles = point.compiled_from if twin else None  # a twin always names it (plan.compiled_twins)
    return VariantAtPoint(
        id=point.id,
        fn=variant.fn,
        device=point.device,
        dtype=point.dtype,
        tolerance=tolerance_at(point.tolerance, point.size),
        inputs=lambda: input_cache.get(point),
        mode=point.timing,
        compiles=compiles,
        not_compilable=comparison.uncompilable.get(compiles) if twin else None,
        # A case's metrics describe its own eager variants (checkpoint's saved activations by
        # segment count); a twin's compiled graph is not what they measure.
        metrics=None
        if comparison.metrics is None or twin
        else (lambda inputs, device: comparison.metrics(point.variant_name, inputs, device)),
        flops=comparison.flops_of(variant, point.size),
        bytes_moved=comparison.bytes_of(variant, point.size, itemsize),
    )


def _as_test_outcome(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, its NotMeasured a skip with the reason and its WrongAnswer a failure
    without a traceback (the message says what broke). Raised outside the except blocks, so the
    harness's frames (and the tensors they hold) are released first."""
    skipped = failed = None
    try:
        return fn(*args, **kwargs)
    except NotMeasured as exc:
        skipped = str(exc)
    except WrongAnswer as exc:
        failed = str(exc)
    if skipped is not None:
        pytest.skip(skipped)
    pytest.fail(failed, pytrace=False)


# A compiled variant is checked by its benchmark (every benchmark checks its variant against the
# oracle before timing it, under --benchmark-disable too): checking it here would compile it twice.
@select_points(lambda p: p.variant.role is not Role.COMPILED)
def test_check(variant_point, input_cache):
    if reason := oversize_reason(variant_point, input_cache):
        pytest.skip(reason)
    _as_test_outcome(variant_benchmark.check, _at_point(variant_point, input_cache))


def test_benchmark(variant_point, input_cache, benchmark, machine_ceilings, request):
    point, case = variant_point, variant_point.case
    if reason := oversize_reason(point, input_cache):
        pytest.skip(reason)
    at = _at_point(point, input_cache)
    benchmark.group = f"{case.id} {point.size_label} {dtype_name(point.dtype)} {point.device}"
    if point.timing != "warm":
        benchmark.group += f" {point.timing}"
    device_ceilings = machine_ceilings(point.device) if not benchmark.disabled else {}
    benchmark.extra_info.update(
        record.BenchmarkInfo.of(
            point.key, tier=case.tier, x=point.comparison.x_axis, flops=at.flops, bytes=at.bytes_moved
        ).to_data()
    )
    if point.timing != "warm":
        benchmark.extra_info["timing_mode"] = point.timing
    marker = request.node.get_closest_marker("benchmark")  # a CUDA warm point's DeviceClock
    _as_test_outcome(
        variant_benchmark.run,
        benchmark,
        at,
        budget=progress(request.config),
        min_rounds=options.min_rounds(request.config),
        clock=marker.kwargs.get("timer") if marker is not None else None,
        device_ceilings=device_ceilings,
    )


def test_rule(check_point, record_property):
    finding = check_point.check.fn(torch.device(check_point.device))
    if finding is not None:
        record_property("finding", finding.to_data())
