"""How long a timed point takes, from the time of one call: the calls the suite makes around and
inside its rounds (harness/contract/rounds.py: the pilot and the plan, the
peak-memory pass, the CUDA host-vs-device probe) times the call, plus the host's cost per round.

Used to estimate a run before it is made (`python -m plan.estimate`), e.g. the full GPU profile
from an earlier GPU run's per-call medians, where no GPU is at hand to run it. Plain Python.

What it cannot know, and takes as parameters with the evidence for their defaults: the fixed cost
of a point outside its calls (pytest's own, the garbage collection between groups, the report
fields), and the float64 oracle's cost relative to the variants it checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.contract import rounds

# pytest-benchmark's pedantic loop and the timer reads: tens of µs a round on a 2-core CPU
# (harness/contract/rounds.py), assumed the same on a GPU box's host.
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
    call): the call that sizes a round, the pilot and the rounds the plan asks for to reach ±2% on
    the median (rounds.expected_plan: the policy the suite's timing runs), the memory pass, and on
    CUDA the host-vs-device probe (rounds.probe_reps)."""
    call_s = max(call_s, 1e-7)
    pilot_rounds, plan = rounds.expected_plan(
        call_s, spread, min_round_s=rounds.MIN_ROUND_S[device], cap_s=cap_s, min_rounds=min_rounds
    )
    probe = rounds.probe_reps(call_s) if device == "cuda" else 0
    calls = 1 + (pilot_rounds + plan.rounds) * plan.iterations + 1 + probe
    seconds = calls * call_s + (pilot_rounds + plan.rounds) * HOST_S_PER_ROUND
    return PointEstimate(calls, plan.rounds, plan.iterations, seconds)
