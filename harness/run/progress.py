"""A run's plan, progress and time budget, as arithmetic: what will run, one line per finished
case (and at least every 30 s) with the elapsed time and an ETA priced from the previous run's time
per test where it is known, and `--time-budget` turned into a cap on each point's timed rounds
(checks are never trimmed).

Plain Python: the pytest glue (`suite/progress_plugin.py`) feeds it the collected tests and each finished
test's duration, and writes the lines it returns.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

OVERHEAD_GUESS_S = 0.3  # per timed point outside its rounds (inputs, oracle, memory pass), until measured
CHECK_GUESS_S = 0.05
HEARTBEAT_S = 30.0
LAUNCH_GUESS_S = 8.0  # a torchrun launch of 2 gloo processes on 2 CPU cores, until measured
COMPILE_GUESS_S = 10.0  # a torch.compile of one point on 2 CPU cores (measured 7-9 s), until measured
# What a test of each kind cost in a first run (no previous run's times) on the CI kind of machine:
# a 2-core Intel Xeon with AVX-512 and AMX, torch 2.13.0+cpu, the quick profile from fresh clones,
# the mean of two evenings' paces: on 2026-11-27 three runs at 210-220 s by pytest's clock (199-209
# s of tests) gave a pair 0.80 s, a timed variant 0.34, a check 0.117, a launch 2.8 and a compile
# 7.3; on the same machine that night (the VM's hour: one commit's suite took 219-252 s at
# 19:54-21:05 and 278-304 s at 22:10-22:50) three runs at 239-255 s gave 1.00, 0.49, 0.143, 3.27
# and 10.1. A pair's rounds run inside whichever of its tests comes first, mostly a side's
# (suite/pair_rounds.py): that test is priced as the pair, the others as reading them. The plan
# line's estimate; the guesses above stay its ceiling. A slower machine takes longer (the 2-core
# AMD EPYC of earlier rounds about twice), and the ETA lines correct it once each kind has run.
PACE_S = {
    "pair": 0.90,
    "variant-replayed": 0.04,
    "pair-replayed": 0.002,  # a pair's test reading rounds a side has timed
    "variant-timed": 0.41,
    "variant": 0.045,  # a variant checked, not timed
    "check": 0.13,
    "launch": 3.0,
}
COMPILE_PACE_S = 8.7  # a cold torch.compile of one point (plan.estimate prices a CPU compile so too)
PACE_S["variant-compiled"] = PACE_S["variant-timed"] + COMPILE_PACE_S


@dataclass
class Tally:
    done: int = 0
    seconds: float = 0.0


def cost_kind(point: dict, timed: bool, launch: bool = False, rounds: str | None = None) -> str:
    """What a test costs like: a launch of processes (seconds each, where a check takes
    milliseconds), a timed variant, a variant only checked, a check, or a test of a timed pair
    (`rounds`: the pair's own test and each side's, whose rows are the pair's rounds replayed,
    suite/pair_rounds.py): "times" for the one of them that runs first, which times the pair's
    interleaved rounds and costs a pair, "reads" for the others, which read them. A timed
    compiled variant costs its cold compile above all else."""
    if launch:
        return "launch"
    kind = point.get("kind", "check")
    if kind == "variant" and timed and point.get("role") == "compiled":
        return "variant-compiled"
    if rounds == "times":
        return "pair"
    if rounds == "reads":
        return f"{kind}-replayed"
    if kind == "variant" and timed:
        return "variant-timed"
    return kind


@dataclass(eq=False)
class Progress:
    budget_s: float | None = None
    max_time_s: float = 1.0
    enabled: bool = False  # timing is on: the plan, progress lines and the history only then
    timed_by_case: Counter = field(default_factory=Counter)
    tests_by_case: Counter = field(default_factory=Counter)
    finished_by_case: Counter = field(default_factory=Counter)
    timed: Tally = field(default_factory=Tally)
    other: Tally = field(default_factory=Tally)
    rounds_s: float = 0.0
    trimmed: list = field(default_factory=list)  # caps below --benchmark-max-time
    started: float = 0.0
    cases_done: int = 0
    timed_ids: set = field(default_factory=set)
    # The ETA weighs what is left by kind (a timed variant, a pair of ≥20 paired rounds, a check):
    # their costs differ a hundredfold, so one mean per test misjudged a run by minutes.
    planned_by_kind: Counter = field(default_factory=Counter)
    done_by_kind: dict = field(default_factory=dict)  # kind → Tally
    kind_of: dict = field(default_factory=dict)  # nodeid → kind, for every test the plan counted
    # The previous run's seconds per test: the best price of a test is what the same test cost
    # last time, scaled by how much slower this run goes so far. The by-kind means stay the
    # fallback: on the first run, and for tests the history lacks.
    history: dict = field(default_factory=dict)  # nodeid → seconds, from the previous run
    took: dict = field(default_factory=dict)  # nodeid → seconds, this run
    last_line_s: float = 0.0  # elapsed seconds at the last progress line

    # plan ------------------------------------------------------------------------------------------
    def plan(self, tests, history: dict | None = None) -> list[str]:
        """Count `tests` — (node ID, point dict, timed, launch, pair) of each test that will run,
        in the order they run: its point's description, whether it takes pytest-benchmark's
        fixture, whether it launches processes and the ID of the timed pair whose rounds it times
        or reads (the pair's own test, a side's replayed row), else None — and say what the run
        will do (nothing while timing is off). The first test of a pair to run times the rounds
        (mostly a side's); priced as the pair's test, the ETA missed the rounds a side had taken
        and priced the pair's 85 tests at 77 s still to come that cost 0.1 s (4 min left of 1)."""
        self.started = time.perf_counter()
        self.history = history if isinstance(history, dict) else {}
        rounds_timed: set = set()
        for nodeid, point, timed, launch, pair in tests:
            self.tests_by_case[point["case"]] += 1
            if timed and self.enabled:
                self.timed_by_case[point["case"]] += 1
                self.timed_ids.add(nodeid)
            rounds = None
            if pair is not None and self.enabled:
                rounds = "reads" if pair in rounds_timed else "times"
                rounds_timed.add(pair)
            kind = cost_kind(point, nodeid in self.timed_ids, launch, rounds)
            self.kind_of[nodeid] = kind
            self.planned_by_kind[kind] += 1
        if not self.enabled or not self.timed_by_case:
            return []
        timed, tests = sum(self.timed_by_case.values()), sum(self.tests_by_case.values())
        previous = self._history_s(list(self.kind_of))
        if previous is not None:
            expected, basis = previous, "at the previous run's times"
        else:
            # Every kind at the CI machine's pace, and the ceiling beside it: every kind at its
            # price before it is measured, pairs and timed points at their cap. The ceiling alone
            # said 8.7 min of quick runs that took 3.5-3.7 on the CI machine (and 8-9 on the EPYC).
            expected = sum(n * self.pace_s(kind) for kind, n in self.planned_by_kind.items())
            ceiling = sum(n * self.guess_s(kind) for kind, n in self.planned_by_kind.items())
            basis = (
                f"each kind at the CI machine's pace, a 2-core Xeon; at most {ceiling / 60:.1f} min "
                "with each kind at its price before it is measured, rounds at their cap"
            )
        budget = f"; --time-budget {self.budget_s:g} s trims the rounds to fit" if self.budget_s else ""
        return [
            f"plan: {timed} timed points and {tests - timed} other tests in {len(self.tests_by_case)} "
            f"cases; rounds stop at ±2% on the median or {self.max_time_s:g} s per point; about "
            f"{expected / 60:.1f} min ({basis}){budget}",
            "      " + ", ".join(f"{c} {n}" for c, n in sorted(self.timed_by_case.items())),
        ]

    # budget ---------------------------------------------------------------------------------------
    def round_cap_s(self, point_id: str) -> float:
        """Seconds of timed rounds this point may take: `--benchmark-max-time`, or less where the
        budget left, after the measured cost of everything else still to run, allows less."""
        if not self.budget_s:
            return self.max_time_s
        left_timed = max(1, sum(self.timed_by_case.values()) - self.timed.done)
        left_other = max(
            0, sum(self.tests_by_case.values()) - sum(self.timed_by_case.values()) - self.other.done
        )
        overhead = (
            ((self.timed.seconds - self.rounds_s) / self.timed.done) if self.timed.done else OVERHEAD_GUESS_S
        )
        per_check = self.other.seconds / self.other.done if self.other.done else CHECK_GUESS_S
        remaining = self.budget_s - (time.perf_counter() - self.started)
        cap = (remaining - left_timed * max(overhead, 0.0) - left_other * per_check) / left_timed
        cap = min(self.max_time_s, max(0.0, cap))
        if cap < self.max_time_s:
            self.trimmed.append((point_id, cap))
        return cap

    def spent_in_rounds(self, seconds: float) -> None:
        self.rounds_s += seconds

    # progress -------------------------------------------------------------------------------------
    def finished(self, nodeid: str, case: str, seconds: float) -> list[str]:
        """A counted test is done (all its phases took `seconds`): the progress line it calls for."""
        if nodeid not in self.kind_of:
            return []
        tally = self.timed if nodeid in self.timed_ids else self.other
        tally.done += 1
        tally.seconds += seconds
        by_kind = self.done_by_kind.setdefault(self.kind_of[nodeid], Tally())
        by_kind.done += 1
        by_kind.seconds += seconds
        self.took[nodeid] = seconds
        self.finished_by_case[case] += 1
        if not (self.enabled and self.timed_by_case):
            return []
        elapsed = time.perf_counter() - self.started
        if self.finished_by_case[case] == self.tests_by_case.get(case):
            self.cases_done += 1
            self.last_line_s = elapsed
            return [
                f"[{self.cases_done}/{len(self.tests_by_case)}] {case}: "
                f"{self.tests_by_case[case]} tests done; elapsed {clock(elapsed)}, "
                f"ETA {clock(self.eta_s(elapsed))}"
            ]
        if elapsed - self.last_line_s >= HEARTBEAT_S:
            # Cases end late (every case's checks run first, its timed points after), so between
            # case lines the run says where it is at least this often.
            self.last_line_s = elapsed
            done, planned = len(self.took), len(self.kind_of)
            return [f"[{done}/{planned} tests] elapsed {clock(elapsed)}, ETA {clock(self.eta_s(elapsed))}"]
        return []

    def eta_s(self, elapsed: float) -> float:
        """Seconds left: from the previous run's time per test where it covers most of what is left
        (`_eta_from_history`), else each kind's remaining tests at that kind's mean so far, a kind
        not begun yet at the CI machine's pace (`pace_s`) times this run's pace against it over the
        kinds begun, never above its ceiling (`guess_s`); both stretched by elapsed over measured,
        so the time between tests counts. At the ceiling, a first run on the CI machine read "ETA
        6m49s" 2m19s in, and ended 1m20s later."""
        done = sum(t.done for t in self.done_by_kind.values())
        if not done:
            return 0.0
        from_history = self._eta_from_history(elapsed)
        if from_history is not None:
            return from_history
        measured = sum(t.seconds for t in self.done_by_kind.values())
        stretch = elapsed / measured if measured > 0 else 1.0  # collection, fixtures, gc between tests
        paced = sum(t.done * self.pace_s(kind) for kind, t in self.done_by_kind.items())
        pace = measured / paced if paced > 0 else 1.0  # this machine against the CI machine's pace
        left = 0.0
        for kind, planned in self.planned_by_kind.items():
            tally = self.done_by_kind.get(kind, Tally())
            if tally.done:
                mean = tally.seconds / tally.done
            else:
                mean = min(self.pace_s(kind) * pace, self.guess_s(kind))
            left += max(0, planned - tally.done) * mean * stretch
        return left

    def guess_s(self, kind: str) -> float:
        """A kind's price before one of its tests has run: the plan's ceiling for it. Not the mean of
        what ran so far: the suite runs its checks (milliseconds) first, so at 61% of one run's tests
        that mean said 37 s were left of 2.5 min."""
        if kind == "pair":
            return 2 * self.max_time_s + OVERHEAD_GUESS_S  # two ways, interleaved, each to the cap
        if kind.endswith("-replayed"):
            return OVERHEAD_GUESS_S  # its rounds are its pair's
        if kind == "variant-compiled":
            return self.max_time_s + OVERHEAD_GUESS_S + COMPILE_GUESS_S
        if kind.endswith("-timed"):
            return self.max_time_s + OVERHEAD_GUESS_S
        return LAUNCH_GUESS_S if kind == "launch" else CHECK_GUESS_S

    def pace_s(self, kind: str) -> float:
        """A kind's cost in a first run on the CI machine (PACE_S), never above its ceiling."""
        return min(PACE_S.get(kind, PACE_S["check"]), self.guess_s(kind))

    def _history_s(self, nodeids: list[str]) -> float | None:
        """What `nodeids` cost in the previous run (those it lacks at its mean), or None where it
        prices under 90% of them."""
        priced = [_seconds(self.history.get(n)) for n in nodeids]
        known = [s for s in priced if s is not None]
        if not nodeids or len(known) < 0.9 * len(nodeids):
            return None
        return sum(known) + (len(nodeids) - len(known)) * (sum(known) / len(known) if known else 0.0)

    def _eta_from_history(self, elapsed: float) -> float | None:
        """What is left at its previous cost, times this run's pace (elapsed over what the tests
        done so far cost last time, so a busier machine or pytest's own time between tests count).
        None where the history prices under 90% of the tests left or none of those done."""
        if not self.history:
            return None
        left = [n for n in self.kind_of if n not in self.took]
        priced = [n for n in left if _seconds(self.history.get(n)) is not None]
        before = sum(_seconds(self.history.get(n)) or 0.0 for n in self.took)
        if not left or len(priced) < 0.9 * len(left) or before <= 0:
            return 0.0 if not left else None
        pace = elapsed / before
        unpriced = len(left) - len(priced)
        mean = sum(self.history[n] for n in priced) / len(priced) if priced else 0.0
        return pace * (sum(self.history[n] for n in priced) + unpriced * mean)

    # the end --------------------------------------------------------------------------------------
    def history_to_keep(self) -> dict | None:
        """The history the next run prices from: this run's times over the previous ones; None
        where this run timed nothing to add."""
        if not self.took or not self.enabled:
            return None
        return {**self.history, **{n: round(s, 4) for n, s in self.took.items()}}

    def summary(self) -> list[str]:
        if not self.trimmed:
            return []
        lowest = min(cap for _, cap in self.trimmed)
        return [
            f"time budget {self.budget_s:g} s: {len(self.trimmed)} points' rounds capped below "
            f"{self.max_time_s:g} s (lowest {lowest:.3g} s); their precision flags say which missed ±2%"
        ]


def _seconds(value) -> float | None:
    """A price read back from the history, which a user may have edited: a finite non-negative
    number, else none."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf"):
        return float(value)
    return None


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s"
