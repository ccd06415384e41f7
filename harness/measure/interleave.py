"""Time two ways of computing one thing side by side: rounds alternating between them.

A pair timed one side after the other compares two machines: the first side's rounds ran while
one job was on the other core, the second side's after it finished. Here each round times both
sides back to back, in alternating order (A B, B A, A B, …) so neither always runs first, on warm
caches or a fresh turbo budget; `harness.contract.gain.paired_ratio` then takes the ratio round by round.
This is asv's ``--interleave-rounds``, Google Benchmark's random interleaving and tritonbench's
side-a/side-b, for two callables; none of them times arbitrary Python callables in-process with
a precision-driven round count, so it is written here.

The clock is the device's (`harness.measure.device`): on CUDA a DeviceClock, whose readings at a round's
start and end wait for the device, so the round's calls run back to back with no barrier and the
figure is device time; on the CPU the host's, around calls that return with their work done.
A side may have a context to run in (`harness.measure.block_context`: its precision flags, say): it
is entered around each of that side's round blocks, outside the clock's readings, never around
each call. Plain Python, no torch.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Mapping

from harness.contract import rounds

# Paired rounds a pair always gets, however precise its pilot looked: a pilot of a few rounds says
# how precise the median is within this run, not how much it moves between runs, and the gate
# compares runs by bootstrapping each run's rounds. At 6 rounds (the fewest an interval needs)
# two unchanged quick runs on the CI machine could not be told apart from a 10% drop (exit 3);
# the slowest quick-profile pairs (~0.2 s a round) spend ~4 s on 20.
MIN_PAIRED_ROUNDS = 20
# A side's first call after the other side's block runs on caches and TLB entries the other side
# filled: `distance.pairwise`'s matmul at n = 256 took 0.97 ms as the first call after the
# broadcast against 0.40 ms in a loop (0.29 against 0.19 ms at n = 128; AMD EPYC, 2 cores), and
# its second call was back at the loop's time. Rounds of one call would then time the fast side
# cold and speed-ups would shrink (88x against the loops' 185x at n = 256). So a side's block
# starts with one untimed call where that costs little, a block shorter than this; in a longer
# block the refill (at most the last-level cache's few MiB) weighs a few percent.
REWARM_BELOW_S = 20e-3
BALANCE = 0.1


@dataclass(frozen=True)
class PairedRounds:
    """Per-call seconds of each side, round by round (round i of every side taken together)."""

    seconds: Mapping[str, list[float]]
    iterations: Mapping[str, int]
    first: list[str] = field(default_factory=list)  # which side ran first in each round
    planned: int = 0
    capped: bool = False  # the precision target needed more rounds than the cap allowed
    rewarmed: tuple[str, ...] = ()  # the sides whose blocks start with an untimed call
    fits: Mapping[str, rounds.CallFit] = field(default_factory=dict)  # each side's gap fit, where fitted

    def info(self) -> dict:
        return {
            "paired_rounds": len(self.first),
            "iterations": dict(self.iterations),
            "rounds_planned": self.planned,
            "rounds_capped": self.capped,
            "rewarmed": list(self.rewarmed),
            "gap_s": {name: fit.gap_s for name, fit in self.fits.items()},
        }


Contexts = Mapping[str, Callable[[], ContextManager]]


def one_round(call: Callable[[], object], iterations: int, clock) -> float:
    """Per-call seconds of `iterations` calls back to back between two readings of `clock`."""
    t0 = clock()
    for _ in range(iterations):
        call()
    return (clock() - t0) / iterations


def run_rounds(
    calls: Mapping[str, Callable[[], object]],
    iterations: Mapping[str, int],
    n: int,
    clock=None,
    start: int = 0,
    contexts: Contexts | None = None,
    rewarm=(),
):
    """`n` rounds; round i (counted from `start`) runs the sides in the given order when i is
    even, reversed when odd, each side's block of calls inside its context (if it has one),
    after one untimed call for the sides in `rewarm`."""
    clock = clock or time.perf_counter
    contexts = contexts or {}
    names = list(calls)
    out: dict[str, list[float]] = {name: [] for name in names}
    first = []
    for i in range(start, start + n):
        order = names if i % 2 == 0 else names[::-1]
        first.append(order[0])
        for name in order:
            with contexts.get(name, contextlib.nullcontext)():
                if name in rewarm:
                    calls[name]()
                out[name].append(one_round(calls[name], iterations[name], clock))
    return out, first


def blocks(call_s: Mapping[str, float], min_round_s: float) -> tuple[dict[str, int], list[str]]:
    """(calls per round of each side, the sides whose block starts with an untimed call), from one
    call's seconds of each. A block lasts at least `min_round_s`, and the cheap side's at least
    BALANCE of the other's: a round then costs at most that much more, and the cheap side's own
    row (its side of these rounds, suite/pair_rounds.py) averages several calls a round rather
    than one. A block under REWARM_BELOW_S starts with an untimed call."""
    longest = max(rounds.iterations_for(s, min_round_s) * s for s in call_s.values())
    iterations = {
        name: rounds.iterations_for(s, max(min_round_s, BALANCE * longest)) for name, s in call_s.items()
    }
    return iterations, [name for name, s in call_s.items() if iterations[name] * s < REWARM_BELOW_S]


def timed_pair(
    calls: Mapping[str, Callable[[], object]],
    *,
    cap_s: float,
    min_rounds: int = 6,
    min_round_s: float = rounds.MIN_ROUND_S["cpu"],
    target: float = rounds.TARGET,
    clock=None,
    contexts: Contexts | None = None,
    fit_gap: bool = False,
) -> PairedRounds:
    """Both sides warmed, sized (calls per round so a round lasts ≥ `min_round_s`), then a pilot
    of paired rounds plans how many make the median ratio's 95% interval ±`target`, within
    `cap_s` seconds for the whole pair and at least `min_rounds` (the pilot's rounds are kept:
    they are paired rounds like the rest); a short side's block starts with an untimed call
    (`REWARM_BELOW_S`). A cap of 0 (a spent --time-budget) leaves the floor:
    `min_rounds`, as a variant timed alone keeps its minimum rounds. `clock`: the device's
    (default the host's); `contexts`: a side's context, entered once around its warm-up and once
    around each of its round blocks; `fit_gap` (a device's clock, whose every reading leaves the
    launch gap inside the next window): each side sized from several calls and its in-window gap
    measured (`harness.contract.rounds.fit_calls`), not from one call that holds the whole gap."""
    if len(calls) != 2:
        raise ValueError(f"a pair has two sides, not {len(calls)}")
    if not cap_s >= 0 or min_rounds < 1:
        raise ValueError("cap_s must be 0 or more and min_rounds at least 1")
    clock = clock or time.perf_counter
    contexts = contexts or {}
    call_s, fits = {}, {}
    for name, call in calls.items():
        with contexts.get(name, contextlib.nullcontext)():
            call()  # warm-up: allocator, kernel selection, first-touch of the output
            call_s[name] = one_round(call, 1, clock)
            fit = rounds.fit_calls(call, clock, call_s[name]) if fit_gap else None
        if fit is not None:
            fits[name], call_s[name] = fit, fit.per_call_s
    iterations, rewarm = blocks(call_s, min_round_s)
    started = time.perf_counter()
    pilot = max(min(rounds.PILOT_SAMPLES, min_rounds), 2)
    seconds, first = run_rounds(calls, iterations, pilot, clock, contexts=contexts, rewarm=rewarm)
    spent = time.perf_counter() - started
    per_round = spent / pilot
    a, b = (seconds[name] for name in calls)
    logs = [math.log(x / y) for x, y in zip(a, b) if x > 0 and y > 0]
    width = _halfwidth(logs) if len(logs) >= 6 else math.inf
    needed = rounds.rounds_needed(len(logs), width, target)
    total, capped = rounds.round_count(max(needed, pilot), per_round, cap_s=cap_s, min_rounds=min_rounds)
    # `min_rounds` is a floor even for slow calls (round_count would cut those to 3): a paired
    # interval needs that many rounds, and a pair without one cannot be judged at all.
    total = max(total, min_rounds)
    if total > pilot:
        more, more_first = run_rounds(
            calls, iterations, total - pilot, clock, start=pilot, contexts=contexts, rewarm=rewarm
        )
        for name in calls:
            seconds[name] += more[name]
        first += more_first
    return PairedRounds(
        seconds, iterations, first, planned=total, capped=capped, rewarmed=tuple(rewarm), fits=fits
    )


def _halfwidth(logs: list[float]) -> float:
    """Relative half-width of the median ratio's interval, from the log ratios' order statistics."""
    lo, _, hi = rounds.median_ci(logs)
    return (math.exp(hi) - math.exp(lo)) / 2
