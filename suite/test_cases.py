"""The three generic tests every case gets from its declaration.

* ``test_check``: each variant equals the oracle within the dtype's tolerance and leaves its inputs as
  they were (harness.mutation); ``test_benchmark`` checks the same again after its timed calls.
* ``test_benchmark``: each variant timed by pytest-benchmark (device-synchronized), with its peak
  memory, error and cost model in ``extra_info``; an out-of-memory size is recorded and skipped.
* ``test_rule``: each rule check of the case, with its finding on the notes' claim recorded.
"""

from __future__ import annotations

import functools
import time

import pytest
import torch

from cases.spec import Role, dtype_name, tolerance_at
from harness import compiled, isolation, measure, mutation, precision_flags, record
from harness.timing import capture_graph
from plan import compiled_of, oversize_reason, select_points
from suite import timing
from suite.progress import progress


def _tolerance(point):
    return tolerance_at(point.tolerance, point.size)


def _fail_on_error(point, err: measure.Error, when: str = "") -> None:
    """Fail the test where the check failed, saying what broke and, with `when`, at which call."""
    if err.within:
        return
    at = f" {when}" if when else ""
    if err.changed_inputs:
        pytest.fail(
            f"{point.id}: the variant changed its inputs in place{at} ({', '.join(err.changed_inputs)}): "
            f"later calls, and the variants after it, would run on other inputs than the truth's; "
            f"worst {err.worst}",
            pytrace=False,
        )
    # The precision flags in force when it failed: an error of reduced-precision size in an fp32
    # variant (seen once in nine runs: cdist_mm at 6e-4 of its truth) points at a flag left set.
    flags = ", ".join(
        f"{k}={v}" for k, v in precision_flags.snapshot().items() if v != precision_flags.ABSENT
    )
    pytest.fail(
        f"{point.id}: outside tolerance {_tolerance(point)}{at} "
        f"(max abs error {err.max_abs:.3g}, max rel {err.max_rel:.3g}); worst {err.worst}; "
        f"precision flags: {flags}",
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


# A compiled variant is checked by its benchmark (every benchmark checks its variant against the
# oracle before timing it, under --benchmark-disable too): checking it here would compile it twice.
@select_points(lambda p: p.variant.role is not Role.COMPILED)
def test_check(variant_point, input_cache):
    point = variant_point
    if reason := oversize_reason(point, input_cache):
        pytest.skip(reason)

    def run():
        inputs, truth = input_cache.get(point)
        return measure.checked_call(point.variant.fn, inputs, truth, _tolerance(point))[1]

    _fail_on_error(point, _run_or_skip_on_oom(point, run))


def test_benchmark(variant_point, input_cache, benchmark, machine_ceilings, request):
    point, case, comparison = variant_point, variant_point.case, variant_point.comparison
    if reason := oversize_reason(point, input_cache):
        pytest.skip(reason)
    itemsize = torch.empty((), dtype=point.dtype).element_size()
    benchmark.group = f"{case.id} {point.size_label} {dtype_name(point.dtype)} {point.device}"
    if point.timing != "warm":
        benchmark.group += f" {point.timing}"
    device_ceilings = machine_ceilings(point.device) if not benchmark.disabled else {}
    benchmark.extra_info.update(
        record.BenchmarkInfo(
            case=case.id,
            variant=point.variant_name,
            role=point.variant.role.value,
            size=dict(point.size),
            size_label=point.size_label,
            dtype=dtype_name(point.dtype),
            device=point.device,
            tier=case.tier,
            x=comparison.x_axis,
            flops=comparison.flops_of(point.variant, point.size),
            bytes=comparison.bytes_of(point.variant, point.size, itemsize),
            part=point.part,
        ).to_data()
    )
    if point.timing != "warm":
        benchmark.extra_info["timing_mode"] = point.timing

    # Where a point's time goes (the full GPU profile's budget is mostly outside the rounds):
    # inputs and the float64 oracle, a compile, the checked peak-memory pass, pilot and rounds.
    phases = benchmark.extra_info["phase_s"] = {}
    started = time.perf_counter()
    _run_or_skip_on_oom(point, lambda: input_cache.get(point))
    phases["inputs_oracle"] = time.perf_counter() - started
    if point.variant.role is Role.COMPILED:
        benchmark.extra_info.update(_compile_first(point, input_cache))
        phases["compile"] = benchmark.extra_info["compile_s"]

    def measured_once():
        inputs, truth = input_cache.get(point)
        call = functools.partial(point.variant.fn, *inputs)
        before = mutation.snapshot(inputs)  # outside the peak: the digest's buffers are not the variant's
        # The first call is also the warm-up (allocator, cuDNN/oneDNN kernel selection); on memory
        # that holds no answer another variant left (measure.fresh_call).
        out, peak = measure.fresh_call(lambda: measure.peak_memory(call, point.device), truth)
        return call, before, peak, measure.check(out, truth, _tolerance(point), inputs, before)

    started = time.perf_counter()
    call, before, peak, err = _run_or_skip_on_oom(point, measured_once)
    phases["memory_pass"] = time.perf_counter() - started
    benchmark.extra_info.update(peak_bytes=peak, max_abs_err=err.max_abs, max_rel_err=err.max_rel)
    if comparison.metrics is not None and point.variant.role is not Role.COMPILED:
        # A case's metrics describe its own eager variants (checkpoint's saved activations by
        # segment count); a twin's compiled graph is not what they measure.
        inputs, _ = input_cache.get(point)
        benchmark.extra_info.update(
            comparison.metrics(point.variant_name, inputs, torch.device(point.device))
        )
    _fail_on_error(point, err)  # timings of a wrong answer are not recorded as results
    replay = _checked_graph_replay(point, call, input_cache) if point.timing == "graph" else None
    marker = request.node.get_closest_marker("benchmark")  # a CUDA warm point's DeviceClock
    clock = marker.kwargs.get("timer") if marker is not None else None
    budget = progress(request.config)
    cap = budget.round_cap_s(point.id)
    started = time.perf_counter()
    last, info = _run_or_skip_on_oom(
        point,
        lambda: timing.run(benchmark, call, point.device, point.timing, request.config, replay, clock, cap),
    )
    phases["timing"] = time.perf_counter() - started
    # The first call was checked; a variant that goes wrong once warm (a stale cache, a buffer
    # reused across calls, an input it writes into) shows in the last timed call's output.
    inputs, truth = input_cache.get(point)
    warm = measure.check(last, truth, _tolerance(point), inputs, before)
    del last
    if not warm.within:
        benchmark.has_error = True  # pytest-benchmark leaves an errored point's rounds out of its JSON
    _fail_on_error(point, warm, "after the timed calls")
    if not benchmark.disabled:
        budget.spent_in_rounds(sum(benchmark.stats.stats.data) * benchmark.stats.iterations)
        if cap < budget.max_time_s:
            info["round_cap_trimmed_s"] = cap
    benchmark.extra_info.update(info)
    if not benchmark.disabled:
        extra = benchmark.extra_info
        extra.update(
            timing.roofline_info(
                point.device,
                point.dtype,
                extra["flops"],
                extra["bytes"],
                benchmark.stats.stats.median,
                device_ceilings,
            )
        )
        extra["warnings"] = extra.get("warnings", []) + timing.above_ceiling_warning(extra)


def _compile_first(point, input_cache) -> dict:
    """Compile the naive variant for this point, timed apart from the steady state that follows;
    a variant torch.compile cannot take is skipped with the reason (recorded in outcomes[])."""
    naive = compiled_of(point.comparison, point.variant_name)
    reason = point.comparison.uncompilable.get(naive)
    if reason:
        pytest.skip(f"not compiled: {reason}")
    inputs, _ = input_cache.get(point)
    try:
        _, seconds, breaks = point.variant.fn.compile_and_time(*inputs)
    except Exception as exc:  # Inductor's failure is a finding about the compiler, recorded per variant
        if measure.is_out_of_memory(exc) or isolation.cuda_context_error() is not None:
            raise  # a dead CUDA context is this test's failure (suite/isolation.py), not a skip
        reason = compiled.short_reason(exc)
    if reason:
        measure.free_memory(point.device)  # outside the except block: the traceback holds tensors
        pytest.skip(f"torch.compile failed: {reason}")
    return {
        "compiles": naive,
        "compile_mode": point.variant.fn.mode,
        "compile_s": seconds,
        "graph_breaks": breaks,
    }


def _checked_graph_replay(point, call, input_cache):
    """The variant captured in a CUDA graph, its replay checked against the truth (a replay that
    differs would time the wrong computation); one that cannot be captured is skipped, with why."""
    reason = None
    try:
        replay, _ = capture_graph(call, point.device)
    except RuntimeError as exc:
        if isolation.cuda_context_error() is not None:
            raise  # a dead CUDA context is this test's failure (suite/isolation.py), not a skip
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
        record_property("finding", finding.to_data())
