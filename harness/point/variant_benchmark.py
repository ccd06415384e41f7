"""One variant at one point, checked and measured: what ``test_check`` and ``test_benchmark`` do.

`check` runs the variant once against the oracle. `run` measures it through pytest-benchmark's
fixture, in this order, each step for a reason:

1. the inputs and the float64 truth (the input cache), then a compiled twin's compile, timed
   apart from the steady state that follows;
2. one call on memory that holds no answer another variant left (`measure.fresh_call`): the
   warm-up, the peak-memory pass and the check, which must pass before any timing is recorded
   (the timings of a wrong answer are not results);
3. the case's own metrics, and for the ``graph`` mode a capture whose replay is checked too;
4. the timed rounds in the point's mode (`harness.measure.timing.timed_rounds`) within the point's cap,
   of the bare computation inside the variant's precision flags, set once around them all
   (`harness.measure.block_context.split`; the checked call of step 2 sets them itself); for a
   side of a timed pair, its side of the pair's interleaved rounds instead, replayed (`paired`:
   the variant is timed once, in its pair), or where the pair could not be timed, rounds timed
   here and replayed the same way;
5. the last timed call's output checked again: a variant that goes wrong once warm (a stale cache,
   a buffer reused across calls, an input it writes into) shows only there;
6. the roofline fraction against the machine's ceilings, flagged where it is above them.

Where a point cannot be measured here (out of memory, a compile or a capture that fails) it
raises `NotMeasured` with the reason; a wrong answer raises `WrongAnswer` saying what broke. The
pytest glue turns them into a skip and a failure. Plain Python: no pytest, no cases, no plan.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

from harness import measure
from harness.machine import ceilings
from harness.measure import block_context, compiled, mutation, precision_flags, timing
from harness.run import isolation


class NotMeasured(Exception):
    """The point cannot be measured on this machine; the message is the reason, recorded."""


class WrongAnswer(Exception):
    """The variant's answer is wrong (outside its tolerance, or its inputs changed); the message
    says what broke, where and with which precision flags in force."""


@dataclass(frozen=True)
class VariantAtPoint:
    """What the harness needs of one variant at one point (the plan's VariantPoint resolved)."""

    id: str  # the point's ID, named in every reason and failure
    fn: Callable[..., Any]
    device: str
    dtype: torch.dtype
    tolerance: Any  # a cases.spec.Tol at this size: rtol, atol, floor, norm
    inputs: Callable[[], tuple[tuple, Any]]  # (inputs, truth), shared by the point's variants
    mode: str = "warm"  # harness.measure.timing.TIMING_MODES
    compiles: str | None = None  # a compiled twin: the naive variant it compiles
    not_compilable: str | None = None  # why the case says torch.compile cannot take that variant
    metrics: Callable[[tuple, torch.device], dict] | None = None  # the case's own, of the inputs
    flops: float | None = None  # the cost model at this size, for the roofline
    bytes_moved: float | None = None
    group: str = ""  # pytest-benchmark's group: the variants a table and --benchmark-compare set side by side
    recorded: Mapping[str, Any] = field(default_factory=dict)  # the point's record.BenchmarkInfo data


def wrong_answer(variant: VariantAtPoint, err: measure.Error, when: str = "") -> str | None:
    """What broke, where the check failed and, with `when`, at which call; None when within."""
    if err.within:
        return None
    at = f" {when}" if when else ""
    if err.changed_inputs:
        return (
            f"{variant.id}: the variant changed its inputs in place{at} ({', '.join(err.changed_inputs)}): "
            f"later calls, and the variants after it, would run on other inputs than the truth's; "
            f"worst {err.worst}"
        )
    # The precision flags in force when it failed: an error of reduced-precision size in an fp32
    # variant (seen once in nine runs: cdist_mm at 6e-4 of its truth) points at a flag left set.
    flags = ", ".join(
        f"{k}={v}" for k, v in precision_flags.snapshot().items() if v != precision_flags.ABSENT
    )
    return (
        f"{variant.id}: outside tolerance {variant.tolerance}{at} "
        f"(max abs error {err.max_abs:.3g}, max rel {err.max_rel:.3g}); worst {err.worst}; "
        f"precision flags: {flags}"
    )


def _raise_if_wrong(variant: VariantAtPoint, err: measure.Error, when: str = "") -> None:
    message = wrong_answer(variant, err, when)
    if message is not None:
        raise WrongAnswer(message)


def not_measured_on_oom(variant: VariantAtPoint, fn: Callable[[], Any]) -> Any:
    """`fn()`, or NotMeasured when it runs out of memory (the run goes on); other errors raise."""
    try:
        return fn()
    except Exception as exc:
        if not measure.is_out_of_memory(exc):
            raise
    measure.free_memory(variant.device)  # outside the except block: the traceback holds tensors
    raise NotMeasured(f"out of memory at {variant.id}")


def check(variant: VariantAtPoint) -> None:
    """One call against the truth, on memory that holds nothing stale, its inputs watched."""

    def run():
        inputs, truth = variant.inputs()
        return measure.checked_call(variant.fn, inputs, truth, variant.tolerance)[1]

    _raise_if_wrong(variant, not_measured_on_oom(variant, run))


def run(
    benchmark,
    variant: VariantAtPoint,
    *,
    budget,
    min_rounds: int,
    clock=None,
    device_ceilings,
    paired: Callable[[], tuple[list[float], dict]] | None = None,
) -> None:
    """Measure `variant` with `benchmark` (pytest-benchmark's fixture): its group and extra_info,
    which gets the point's record.BenchmarkInfo, where the point's time went (``phase_s``), its
    peak memory and error, the timing mode's figures and the roofline.

    `budget`: the run's time budget (harness.run.progress.Progress: ``round_cap_s(point_id)``,
    ``max_time_s``, ``spent_in_rounds(seconds)``), asked for the cap just before the rounds;
    `min_rounds`: ``--benchmark-min-rounds``; `clock`: a CUDA point's DeviceClock (every mode), or
    with `paired` the item's ReplayClock; `device_ceilings`: the machine's measured ceilings for
    the device ({} for none); `paired()`: (per-call seconds, info) of this variant's side of its
    pair's rounds, raising NotMeasured where the pair cannot be timed."""
    benchmark.group = variant.group
    benchmark.extra_info.update(variant.recorded)
    if benchmark.disabled:
        paired = None  # nothing is timed: the variant is called once, as any other
    # Where a point's time goes (the full GPU profile's budget is mostly outside the rounds):
    # inputs and the float64 oracle, a compile, the checked peak-memory pass, pilot and rounds.
    phases = benchmark.extra_info["phase_s"] = {}
    started = time.perf_counter()
    not_measured_on_oom(variant, variant.inputs)
    phases["inputs_oracle"] = time.perf_counter() - started
    if variant.compiles is not None:
        benchmark.extra_info.update(compile_first(variant))
        phases["compile"] = benchmark.extra_info["compile_s"]

    def measured_once():
        inputs, truth = variant.inputs()
        call = functools.partial(variant.fn, *inputs)
        before = mutation.snapshot(inputs)  # outside the peak: the digest's buffers are not the variant's
        # The first call is also the warm-up (allocator, cuDNN/oneDNN kernel selection); on memory
        # that holds no answer another variant left (measure.fresh_call). Its peak is measured only
        # where it is recorded: under --benchmark-disable nothing is, and the CPU's peak comes from
        # a profiler pass that costs more than the call.
        if benchmark.disabled:
            out, peak = measure.fresh_call(call, truth), None
        else:
            out, peak = measure.fresh_call(lambda: measure.peak_memory(call, variant.device), truth)
        return inputs, before, peak, measure.check(out, truth, variant.tolerance, inputs, before)

    started = time.perf_counter()
    inputs, before, peak, err = not_measured_on_oom(variant, measured_once)
    # What the rounds time: the bare computation, its block context (its flags, say) entered once
    # around them (a variant that carries none: the call itself).
    call, block_in_force = block_context.entered(variant.fn, inputs)
    phases["memory_pass"] = time.perf_counter() - started
    benchmark.extra_info.update(peak_bytes=peak, max_abs_err=err.max_abs, max_rel_err=err.max_rel)
    if variant.metrics is not None:
        inputs, _ = variant.inputs()
        benchmark.extra_info.update(variant.metrics(inputs, torch.device(variant.device)))
    _raise_if_wrong(variant, err)  # timings of a wrong answer are not recorded as results
    cap = budget.max_time_s
    if paired is not None:
        # Outside this variant's block context: the pair enters each side's own around its blocks.
        started = time.perf_counter()
        from_pair = not_measured_on_oom(variant, lambda: _side_of_pair(paired))
        phases["timing"] = time.perf_counter() - started
    with block_in_force():  # flags restored, and checked restored, on the way out
        replay = _checked_graph_replay(variant, call) if variant.mode == "graph" else None
        if paired is None or from_pair is None:
            cap = budget.round_cap_s(variant.id)
        started = time.perf_counter()
        if paired is None:
            last, info = not_measured_on_oom(
                variant,
                lambda: timing.timed_rounds(
                    benchmark,
                    call,
                    variant.device,
                    variant.mode,
                    max_time_s=budget.max_time_s,
                    min_rounds=min_rounds,
                    cap_s=cap,
                    replay=replay,
                    clock=clock,
                ),
            )
        else:
            if from_pair is None:
                from_pair = not_measured_on_oom(
                    variant,
                    lambda: timing.rounds_by_hand(call, variant.device, cap_s=cap, min_rounds=min_rounds),
                )
            last, info = timing.replayed_rounds(benchmark, clock, call, variant.device, *from_pair)
        phases["timing"] = phases.get("timing", 0.0) + time.perf_counter() - started
    # The first call was checked; a variant that goes wrong once warm (a stale cache, a buffer
    # reused across calls, an input it writes into) shows in the last timed call's output.
    inputs, truth = variant.inputs()
    warm = measure.check(last, truth, variant.tolerance, inputs, before)
    del last
    if not warm.within:
        benchmark.has_error = True  # pytest-benchmark leaves an errored point's rounds out of its JSON
    _raise_if_wrong(variant, warm, "after the timed calls")
    if not benchmark.disabled:
        # A replayed side's rounds were timed in its pair (by this test, or before it, by another):
        # what this test spent on them is its time in that step.
        stats = benchmark.stats.stats
        budget.spent_in_rounds(
            phases["timing"] if paired is not None else sum(stats.data) * benchmark.stats.iterations
        )
        if cap < budget.max_time_s:
            info["round_cap_trimmed_s"] = cap
    benchmark.extra_info.update(info)
    if not benchmark.disabled:
        extra = benchmark.extra_info
        extra.update(
            ceilings.roofline_info(
                variant.device,
                variant.dtype,
                variant.flops,
                variant.bytes_moved,
                benchmark.stats.stats.median,
                device_ceilings,
            )
        )
        extra["warnings"] = extra.get("warnings", []) + ceilings.above_ceiling_warning(extra)


def _side_of_pair(paired) -> tuple[list[float], dict] | None:
    """`paired()`, or None where its pair cannot be timed (a side too big or wrong here: the
    variant's own rounds are timed instead, and the pair's test says why it has none)."""
    try:
        return paired()
    except NotMeasured:
        return None


def compile_first(variant: VariantAtPoint) -> dict:
    """Compile the naive variant for this point, timed apart from the steady state that follows;
    a variant torch.compile cannot take is not measured, with the reason (recorded in outcomes[])."""
    reason = variant.not_compilable
    if reason:
        raise NotMeasured(f"not compiled: {reason}")
    inputs, _ = variant.inputs()
    try:
        _, seconds, breaks = variant.fn.compile_and_time(*inputs)
    except Exception as exc:  # Inductor's failure is a finding about the compiler, recorded per variant
        if measure.is_out_of_memory(exc) or isolation.cuda_context_error() is not None:
            raise  # a dead CUDA context is this test's failure (harness.run.isolation hands the rest over)
        reason = compiled.short_reason(exc)
    if reason:
        measure.free_memory(variant.device)  # outside the except block: the traceback holds tensors
        raise NotMeasured(f"torch.compile failed: {reason}")
    return {
        "compiles": variant.compiles,
        "compile_mode": variant.fn.mode,
        "compile_s": seconds,
        "graph_breaks": breaks,
    }


def _checked_graph_replay(variant: VariantAtPoint, call):
    """The variant captured in a CUDA graph, its replay checked against the truth (a replay that
    differs would time the wrong computation); one that cannot be captured is not measured."""
    reason = None
    try:
        replay, _ = timing.capture_graph(call, variant.device)
    except RuntimeError as exc:
        if isolation.cuda_context_error() is not None:
            raise  # a dead CUDA context is this test's failure (harness.run.isolation hands the rest over)
        reason = f"not capturable in a CUDA graph: {str(exc).splitlines()[0][:300]}"
    if reason:
        measure.free_memory(variant.device)  # outside the except block: the traceback holds tensors
        raise NotMeasured(reason)
    _, truth = variant.inputs()
    _raise_if_wrong(variant, measure.within_tol(replay(), truth, variant.tolerance))
    return replay
