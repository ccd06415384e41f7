"""Small in-check timers for the checks whose finding is a measured comparison.

Why the minimum and not the median: these checks run in CI on shared cores, where another process
stealing a core (or an OpenMP barrier spinning against it) adds tens of milliseconds to any one
call. That noise only ever adds time, so the fastest of a few repeats is the best estimate of the
uncontended cost. The suite's benchmarks (pytest-benchmark) still report medians and spreads.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from harness import timing
from harness.measure import synchronize, synchronized


def best_time(fn: Callable[[], object], device: torch.device, repeats: int = 5) -> float:
    """Seconds of the fastest of `repeats` device-synchronized calls, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return best


def median_time(fn: Callable[[], object], device: torch.device) -> float:
    """Median of 3 device-synchronized calls after a warm-up: enough for a sweep's trend (the
    case's benchmarks time its own sizes properly, with statistics)."""
    return timing.wall_median(synchronized(fn, device), reps=3, budget_s=0.0)
