"""How long a timed point takes, from the time of one call: the calls the suite makes around and
inside its rounds (harness/rounds.py: the pilot and the plan, the
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
    the warm-up call, the pilot (rounds.pilot_samples), the rounds the plan asks for to reach ±2%
    on the median (rounds.round_count), the memory pass, and on CUDA the host-vs-device probe
    (rounds.probe_reps): the same functions the suite's timing uses."""
    call_s = max(call_s, 1e-7)
    iterations = rounds.iterations_for(call_s, rounds.MIN_ROUND_S[device])
    round_s = iterations * call_s
    pilot_rounds = rounds.pilot_samples(call_s, round_s, cap_s)
    if pilot_rounds < 6:  # too few for an interval: the plan asks for all the cap holds
        needed = rounds.MAX_ROUNDS
    else:
        # A round times `iterations` calls back to back: independent calls average, σ/√k. The
        # pilot's median interval: ~1.25·1.96·σ_round/√n (harness/rounds.py).
        width = 1.25 * rounds.Z95 * spread / math.sqrt(iterations) / math.sqrt(pilot_rounds)
        needed = math.ceil(pilot_rounds * (width / rounds.TARGET) ** 2)
    n_rounds, _ = rounds.round_count(needed, round_s, cap_s=cap_s, min_rounds=min_rounds)
    probe = rounds.probe_reps(call_s) if device == "cuda" else 0
    calls = 1 + pilot_rounds * iterations + n_rounds * iterations + 1 + probe
    seconds = calls * call_s + (pilot_rounds + n_rounds) * HOST_S_PER_ROUND
    return PointEstimate(calls, n_rounds, iterations, seconds)
