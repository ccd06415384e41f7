"""How long a timed point takes, from the time of one call: the calls the suite makes around and
inside its rounds (harness/contract/rounds.py: the pilot and the plan, the
peak-memory pass, the CUDA host-vs-device probe) times the call, plus the host's cost per round.

Used to estimate a run before it is made (`python -m suite.estimate`), e.g. the full GPU profile
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
    fit = rounds.fit_call_count(call_s) if device == "cuda" else 0  # the gap's fit sizes the rounds
    calls = 1 + fit + (pilot_rounds + plan.rounds) * plan.iterations + 1 + probe
    seconds = calls * call_s + (pilot_rounds + plan.rounds) * HOST_S_PER_ROUND
    return PointEstimate(calls, plan.rounds, plan.iterations, seconds)


def replayed_point(call_s: float, *, device: str) -> PointEstimate:
    """A side of a timed pair: its rounds are the pair's (`paired_point`), so its own test makes the
    memory pass and one call after the replayed rounds, and on CUDA the host-vs-device probe."""
    call_s = max(call_s, 1e-7)
    calls = 2 + (rounds.probe_reps(call_s) if device == "cuda" else 0)
    return PointEstimate(calls, 0, 1, calls * call_s)


def paired_point(sides, *, device: str, cap_s: float = 1.0, min_rounds: int = 5) -> PointEstimate:
    """Two variants timed in alternating rounds (harness.measure.interleave.timed_pair), each side
    (call seconds, spread σ/median) as `timed_point` takes it: each warmed and sized (the cheap
    side's block at least BALANCE of the other's), a short side's block started by one untimed
    call, a pilot, then the rounds that bring the ratio's interval to ±2% (the two sides' spreads
    add), at least MIN_PAIRED_ROUNDS, within the cap; on CUDA each side's gap fit and graph replay
    too (harness.point.pair_benchmark)."""
    # Not at import: the harness.measure package imports torch.
    from harness.measure import graph_figure, interleave

    (a_s, a_spread), (b_s, b_spread) = [(max(s, 1e-7), spread) for s, spread in sides]
    k, rewarm = interleave.blocks({"a": a_s, "b": b_s}, rounds.MIN_ROUND_S[device])
    calls_per_round = {side: k[side] + (side in rewarm) for side in k}
    round_s = calls_per_round["a"] * a_s + calls_per_round["b"] * b_s
    floor = max(interleave.MIN_PAIRED_ROUNDS, min_rounds)
    pilot = max(min(rounds.PILOT_SAMPLES, floor), 2)
    spread = (a_spread**2 / k["a"] + b_spread**2 / k["b"]) ** 0.5
    needed = rounds.rounds_needed(pilot, rounds.expected_halfwidth(spread, 1, pilot), rounds.TARGET)
    total, _ = rounds.round_count(max(needed, pilot), round_s, cap_s=cap_s, min_rounds=floor)
    total = max(total, floor)
    calls = 4 + total * (calls_per_round["a"] + calls_per_round["b"])  # warm-up and sizing: 2 a side
    extra_s = 0.0
    if device == "cuda":  # each side's gap fit before the rounds and its graph replay after them
        for s in (a_s, b_s):
            more = rounds.fit_call_count(s) + graph_figure.expected_calls(s, rounds.MIN_ROUND_S[device])
            calls += more
            extra_s += more * s
    return PointEstimate(
        calls,
        total,
        k["a"] + k["b"],
        2 * (a_s + b_s) + total * round_s + 2 * total * HOST_S_PER_ROUND + extra_s,
    )
