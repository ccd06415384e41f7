"""The three generic tests every case gets from its declaration.

* ``test_check``: each variant equals the oracle within the dtype's tolerance.
* ``test_benchmark``: each variant timed by pytest-benchmark (device-synchronized), with its peak
  memory, error and cost model in ``extra_info``; an out-of-memory size is recorded and skipped.
* ``test_rule``: each rule check of the case, with its finding on the notes' claim recorded.
"""

from __future__ import annotations

import functools

import pytest
import torch

from cases.spec import dtype_name, size_label, tolerance_at
from harness import measure
from harness.timing import capture_graph
from suite import timing
from suite.conftest import skip_if_too_big


def _tolerance(point):
    return tolerance_at(point.tolerance, point.size)


def _fail_on_error(point, err: measure.Error) -> None:
    if not err.within:
        pytest.fail(
            f"{point.id}: outside tolerance {_tolerance(point)} "
            f"(max abs error {err.max_abs:.3g}, max rel {err.max_rel:.3g}); worst {err.worst}",
            pytrace=False,
        )


def _run_or_skip_on_oom(point, fn):
    try:
        return fn()
    except Exception as exc:
        if not measure.is_out_of_memory(exc):
            raise
    measure.free_memory(point.device)  # outside the except block: the traceback holds tensors
    pytest.skip(f"out of memory at {point.id}")


def test_check(variant_point, input_cache):
    point = variant_point
    skip_if_too_big(point)

    def run():
        inputs, truth = input_cache.get(point)
        return measure.within_tol(point.variant.fn(*inputs), truth, _tolerance(point))

    _fail_on_error(point, _run_or_skip_on_oom(point, run))


def test_benchmark(variant_point, input_cache, benchmark, machine_ceilings, request):
    point, case = variant_point, variant_point.case
    skip_if_too_big(point)
    itemsize = torch.empty((), dtype=point.dtype).element_size()
    benchmark.group = f"{case.id} {size_label(point.size)} {dtype_name(point.dtype)} {point.device}"
    if point.timing != "warm":
        benchmark.group += f" {point.timing}"
    device_ceilings = machine_ceilings(point.device) if not benchmark.disabled else {}
    benchmark.extra_info.update(point.describe())
    benchmark.extra_info.update(
        tier=case.tier,
        x=case.x_axis,
        flops=case.flops(point.size) if case.flops else None,
        bytes=case.bytes_moved(point.size, itemsize) if case.bytes_moved else None,
    )

    def measured_once():
        inputs, truth = input_cache.get(point)
        call = functools.partial(point.variant.fn, *inputs)
        # The first call is also the warm-up (allocator, cuDNN/oneDNN kernel selection).
        out, peak = measure.peak_memory(call, point.device)
        return call, peak, measure.within_tol(out, truth, _tolerance(point))

    call, peak, err = _run_or_skip_on_oom(point, measured_once)
    benchmark.extra_info.update(peak_bytes=peak, max_abs_err=err.max_abs, max_rel_err=err.max_rel)
    if case.metrics is not None:
        inputs, _ = input_cache.get(point)
        benchmark.extra_info.update(case.metrics(point.variant_name, inputs, torch.device(point.device)))
    _fail_on_error(point, err)  # timings of a wrong answer are not recorded as results
    replay = _checked_graph_replay(point, call, input_cache) if point.timing == "graph" else None
    _, info = _run_or_skip_on_oom(
        point, lambda: timing.run(benchmark, call, point.device, point.timing, request.config, replay)
    )
    benchmark.extra_info.update(info)
    if not benchmark.disabled:
        extra = benchmark.extra_info
        extra.update(
            timing.roofline_info(point.device, point.dtype, extra["flops"], extra["bytes"],
                                 benchmark.stats.stats.median, device_ceilings)
        )
        extra["warnings"] = extra.get("warnings", []) + timing.above_ceiling_warning(extra)


def _checked_graph_replay(point, call, input_cache):
    """The variant captured in a CUDA graph, its replay checked against the truth (a replay that
    differs would time the wrong computation); one that cannot be captured is skipped, with why."""
    reason = None
    try:
        replay, _ = capture_graph(call, point.device)
    except RuntimeError as exc:
        reason = f"not capturable in a CUDA graph: {str(exc).splitlines()[0][:300]}"
    if reason:
        measure.free_memory(point.device)  # outside the except block: the traceback holds tensors
        pytest.skip(reason)
    _, truth = input_cache.get(point)
    _fail_on_error(point, measure.within_tol(replay(), truth, _tolerance(point)))
    return replay


def test_rule(check_point, record_property):
    finding = check_point.check.fn(torch.device(check_point.device))
    if finding is not None:
        verdict = finding.verdict.value if finding.verdict is not None else None
        record_property("finding", {"verdict": verdict, "evidence": finding.evidence})
