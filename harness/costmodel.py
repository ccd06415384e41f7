"""How long a timed point takes, from the time of one call: the calls the suite makes around and
inside its rounds (suite/timing.py's pilot and rounds policy, harness/rounds.py's plan, the
peak-memory pass, the CUDA host-vs-device probe) times the call, plus the host's cost per round.

Used to estimate a run before it is made (`python -m suite.estimate`), e.g. the full GPU profile
from an earlier GPU run's per-call medians, where no GPU is at hand to run it. Plain Python.

What it cannot know, and takes as parameters with the evidence for their defaults: the fixed cost
of a point outside its calls (pytest's own, the garbage collection between groups, the report
fields), and the float64 oracle's cost relative to the variants it checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness import rounds

# pytest-benchmark's pedantic loop and the timer reads: tens of µs a round on a 2-core CPU
# (harness/rounds.py), assumed the same on a GPU box's host.
HOST_S_PER_ROUND = 30e-6


@dataclass(frozen=True)
class PointEstimate:
    calls: int
    rounds: int
    iterations: int
    seconds: float  # calls × call time + the host's per-round cost

    def __add__(self, other: PointEstimate) -> PointEstimate:
        return PointEstimate(
            self.calls + other.calls,
            self.rounds + other.rounds,
            self.iterations,
            self.seconds + other.seconds,
        )


def timed_point(
    call_s: float, spread: float, *, device: str, cap_s: float = 1.0, min_rounds: int = 5
) -> PointEstimate:
    """One warm point with calls of `call_s` seconds and relative spread `spread` (σ/median of one
    call):
    the warm-up call, the pilot (10 rounds unless 3 calls exceed 20% of the cap), the rounds the
    plan asks for to reach ±2% on the median (harness.rounds.plan), the memory pass, and on CUDA
    the calls timed by events and by the wall clock (1, or 3-10 for calls under 10 ms)."""
    call_s = max(call_s, 1e-7)
    iterations = rounds.iterations_for(call_s, rounds.MIN_ROUND_S[device])
    round_s = iterations * call_s
    if 3 * call_s > 0.2 * cap_s:
        pilot_rounds, width = 0, math.inf
    else:
        pilot_rounds = rounds.PILOT_SAMPLES
        # A round times `iterations` calls back to back: independent calls average, σ/√k. The
        # pilot's median interval from 10 such rounds: ~1.25·1.96·σ_round/√10 (harness/rounds.py).
        round_spread = spread / math.sqrt(iterations)
        width = 1.25 * rounds.Z95 * round_spread / math.sqrt(pilot_rounds)
    needed = (
        rounds.MAX_ROUNDS
        if math.isinf(width)
        else math.ceil(rounds.PILOT_SAMPLES * (width / rounds.TARGET) ** 2)
    )
    fits = int(cap_s / round_s)
    floor = min(min_rounds, rounds.SLOW_ROUNDS) if min_rounds * round_s > 2 * cap_s else min_rounds
    n_rounds = max(floor, min(needed, fits, rounds.MAX_ROUNDS))
    probe = 0
    if device == "cuda":
        probe = 1 if call_s > 10e-3 else max(3, min(10, int(0.5 / call_s)))
    calls = 1 + pilot_rounds * iterations + n_rounds * iterations + 1 + probe
    seconds = calls * call_s + (pilot_rounds + n_rounds) * HOST_S_PER_ROUND
    return PointEstimate(calls, n_rounds, iterations, seconds)
