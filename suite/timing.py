"""How a point is timed in each mode, through pytest-benchmark's fixture (so its JSON, calibration
and comparisons keep working), and what the timer says about its own numbers (extra_info)."""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable

import torch

from harness import ceilings, measure, rounds, timing


def pedantic_rounds(config, seconds_per_call: float) -> int:
    """As many rounds as pytest-benchmark would run in ``--benchmark-max-time``, at least
    ``--benchmark-min-rounds``: pedantic mode (needed for an untimed setup) does not calibrate."""
    max_time = float(config.getoption("benchmark_max_time", 1.0) or 1.0)
    min_rounds = int(config.getoption("benchmark_min_rounds", 5) or 5)
    return max(min_rounds, min(10_000, math.ceil(max_time / max(seconds_per_call, 1e-7))))


def run(
    benchmark,
    call: Callable[[], Any],
    device: str,
    mode: str,
    config,
    replay=None,
    clock=None,
    cap_s: float | None = None,
) -> tuple[Any, dict]:
    """Time `call` in `mode` with `benchmark`; return the output of its last timed call (for the
    check after the rounds; under --benchmark-disable, of its one call) and the extra_info the
    mode adds (mode, rounds plan, launch-overhead fraction, GPU-busy vs wall time, warnings).

    ``warm`` rounds are planned for precision (harness.rounds) within `cap_s` seconds; on CUDA
    `clock` is the point's DeviceClock (the benchmark's timer), so the calls go back to back with
    no barrier inside a round and the figure is device time.
    """
    info: dict = {"timing_mode": mode}
    cuda = torch.device(device).type == "cuda"
    if mode == "warm":
        if benchmark.disabled:
            result = benchmark(call)
        else:
            cap = cap_s if cap_s is not None else float(config.getoption("benchmark_max_time", 1.0) or 1.0)
            min_rounds = int(config.getoption("benchmark_min_rounds", 5) or 5)
            round_s = rounds.MIN_ROUND_S["cuda" if cuda else "cpu"]
            plan = rounds.pilot_plan(call, clock or time.perf_counter, round_s, cap, min_rounds)
            timed, last = _discarding(call, plan.rounds * plan.iterations)
            benchmark.pedantic(timed, rounds=plan.rounds, iterations=plan.iterations)
            result = last.pop()
            info.update(plan.info())
            if cuda:
                info["timer"] = "cuda_events"
                # The host's view beside the device's: one synchronized call, wall and events.
                info.update(_busy_vs_wall(call, device, benchmark.stats.stats.median))
    elif mode == "cold_l2":
        flush = timing.L2Flush(device)
        timed = measure.synchronized(call, device)
        flush()
        estimate = timing.wall_median(timed, reps=3, budget_s=0.5)
        n_rounds = pedantic_rounds(config, estimate)
        # The flush is pedantic's `setup`: it runs before every round and is not timed.
        result = benchmark.pedantic(timed, setup=flush, rounds=n_rounds, warmup_rounds=1, iterations=1)
        info["l2_flush_bytes"] = flush.buffer.nbytes
        del flush
    elif mode == "graph":
        if replay is None:  # `replay`: a capture of `call` already made (and checked) by the caller
            replay, _ = timing.capture_graph(call, device)
        result = benchmark(replay)
        graph_s = benchmark.stats.stats.median if not benchmark.disabled else timing.wall_median(replay, 3)
        eager_s = timing.wall_median(measure.synchronized(call, device), reps=10, budget_s=1.0)
        info.update(eager_seconds=eager_s, launch_overhead_fraction=max(0.0, 1.0 - graph_s / eager_s))
    else:
        raise ValueError(f"unknown timing mode {mode!r}; use one of {timing.TIMING_MODES}")
    if not benchmark.disabled:
        imprecise = rounds.precision_warning(list(benchmark.stats.stats.data)) if mode == "warm" else None
        info["warnings"] = ([imprecise] if imprecise else []) + timing.timer_warnings(
            list(benchmark.stats.stats.data),
            info.get("device_seconds"),
            info.get("wall_seconds"),
            *_load_and_cores(),
        )
    return result, info


def _discarding(call, calls: int):
    """`call` returning nothing, and a list that receives the output of its `calls`-th call.

    Pedantic keeps a one-iteration round's result alive until the next round returns, so each
    call's output could not reuse the last one's memory (a 16 MiB output measured 15-30% slower
    on CPU: fresh pages each call). Each output is freed inside its round, as in pytest-benchmark's
    calibrated loop and torch.utils.benchmark's Timer, except the last timed one, kept for the
    check after the rounds (a variant right on its first call may be wrong once warm)."""
    last: list = []
    count = 0

    def run():
        nonlocal count
        out = call()
        count += 1
        if count == calls:
            last.append(out)

    return run, last


def _load_and_cores() -> tuple[float | None, int | None]:
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        return None, None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return load, cores


def _busy_vs_wall(call, device, median_s: float) -> dict:
    # No warm-up: the benchmark has just run the same call.
    reps = rounds.probe_reps(median_s)
    device_s, wall_s = timing.device_and_wall_seconds(call, device, reps, warmup=False)
    return {"device_seconds": device_s, "wall_seconds": wall_s}


def roofline_info(
    device: str, dtype: torch.dtype, flops, bytes_moved, median_s: float, device_ceilings
) -> dict:
    """Achieved FLOP/s, B/s and the roofline fraction against this machine's measured ceilings."""
    if not device_ceilings:
        return {}
    key = ceilings.gemm_key(device, dtype)
    info = {"ceiling_key": key}
    info.update(
        ceilings.roofline(
            flops, bytes_moved, median_s, device_ceilings.get(key), device_ceilings.get("copy_bytes_per_s")
        )
    )
    return info


def above_ceiling_warning(info: dict) -> list[str]:
    """A point faster than the machine's ceiling means the ceiling is wrong (measured while the
    machine was busy) or the cost model overcounts: either way the fraction cannot be used."""
    fraction = info.get("roofline_fraction")
    if fraction is not None and fraction > 1.05:
        return [
            f"above ceiling: {fraction:.2f}x the measured {info.get('ceiling_key')} roofline; the "
            f"ceiling was measured under load or the cost model overcounts"
        ]
    return []
