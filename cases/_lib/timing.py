"""Small in-check timers for the checks whose finding is a measured comparison.

`median_time` is for a sweep's trend (the case's benchmarks time its sizes with statistics). A
check whose finding is "A is faster than B" uses `timed_claim` and `judge_faster`: the fastest
call of each side taken one side after the other compares two machines when a neighbour comes
and goes, so the sides are timed in alternating rounds and judged by the suite's gain policy (a
band of ±5%, an interval, and no verdict from a busy machine).

All three read the device's clock (`harness.measure.device`: CUDA events on a GPU, no barrier between
calls; the host's clock on a CPU), as the harness's own timings do.
"""

from __future__ import annotations

from typing import Callable, Mapping

import torch

from cases.spec import Verdict
from harness.contract import gain, rounds
from harness.host import load
from harness.measure import device as devices
from harness.measure import interleave, timing


def best_time(fn: Callable[[], object], device: torch.device, repeats: int = 5) -> float:
    """Seconds of the fastest of `repeats` device-synchronized calls, after one warm-up call: for
    figures given as context, never a verdict (noise only adds time, so the minimum is the best
    guess of the uncontended cost, but two sides timed apart still see two machines)."""
    clock = devices.of(device).clock()
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def median_time(fn: Callable[[], object], device: torch.device) -> float:
    """Median of 3 device-synchronized calls after a warm-up: enough for a sweep's trend (the
    case's benchmarks time its own sizes properly, with statistics)."""
    return timing.clock_median(fn, devices.of(device).clock(), reps=3, budget_s=0.0)


def timed_claim(
    calls: Mapping[str, Callable[[], object]], fast: str, slow: str, device: torch.device, cap_s: float = 0.5
) -> tuple[gain.Ratio, str | None]:
    """`slow` ÷ `fast` from rounds taken side by side (harness.measure.interleave: both sides see the same
    machine), its 95% interval, and why the machine was busy while they ran (None when quiet).

    For a rule check whose finding is "A is faster than B": timed one side after the other, a
    neighbour on the other core decides the answer (the fastest of 5 calls of cross-entropy's two
    targets gave 1.40× quiet and 0.24× beside two CPU burners)."""
    dev = devices.of(device)
    with load.stretch() as over:  # the neighbours over these rounds alone, not the work before them
        paired = interleave.timed_pair(
            dict(calls),
            cap_s=cap_s,
            min_rounds=2 * gain.MIN_PAIRS,
            # The device's rounds, as a pair's (harness.point.pair_benchmark): the CPU's floor on
            # CUDA left the launch gap in every quarter-millisecond round.
            min_round_s=rounds.MIN_ROUND_S.get(dev.kind, rounds.MIN_ROUND_S["cpu"]),
            clock=dev.clock(),
            fit_gap=dev.kind != "cpu",
        )
    ratio = gain.paired_ratio(paired.seconds[slow], paired.seconds[fast])
    return ratio, over.load.busy_reason()


def judge_faster(ratio: gain.Ratio, busy: str | None, what: str) -> tuple[Verdict, str]:
    """The suite's gain policy (harness.contract.gain) for "`what` is faster": holds above the ±5%
    band (on a busy machine too: load only widens an interval, so one that clears the band is a
    finding), fails inside it or below it on a quiet machine. Noise is never a condition: an
    interval across an edge of the band, or anything short of a clear gain on a busy machine, is
    `could not judge`, with the load."""
    answer = gain.classify(ratio, gain.DELTA_FLOOR)
    said = f"{what}: {ratio} ({answer.value})"
    if answer is gain.Gain.FASTER:
        return Verdict.HOLDS, said + (
            f"; timed on a busy machine ({busy}), clear all the same" if busy else ""
        )
    if busy:
        return Verdict.COULD_NOT_JUDGE, f"{said}; machine busy: {busy}"
    if answer is gain.Gain.UNCLEAR:
        return Verdict.COULD_NOT_JUDGE, f"{said}; too noisy to tell"
    return Verdict.FAILS, said
