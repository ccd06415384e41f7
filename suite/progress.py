"""The run's plan, progress and time budget: what will run before the first point, one line per
finished case (and at least every 30 s) with the elapsed time and an ETA priced from the previous
run's time per test where pytest's cache holds it, and `--time-budget` turned into a cap on each
point's timed rounds (checks are never trimmed).

A pytest plugin object on the config (``config.stash[PROGRESS]``), like the recorder.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

PROGRESS = pytest.StashKey["Progress"]()
OVERHEAD_GUESS_S = 0.3  # per timed point outside its rounds (inputs, oracle, memory pass), until measured
CHECK_GUESS_S = 0.05
HISTORY_KEY = "suite/durations"  # pytest's cache: nodeid → seconds of the last run that timed it
HEARTBEAT_S = 30.0
LAUNCH_GUESS_S = 8.0  # a torchrun launch of 2 gloo processes on 2 CPU cores, until measured
COMPILE_GUESS_S = 10.0  # a torch.compile of one point on 2 CPU cores (measured 7-9 s), until measured


@dataclass
class _Tally:
    done: int = 0
    seconds: float = 0.0


def _kind(point: dict, timed: bool, nodeid: str = "") -> str:
    """What a test costs like: a timed variant, a variant only checked, a pair, a check, a launch
    of processes (seconds each, where a check takes milliseconds)."""
    if "test_distributed" in nodeid:
        return "launch"
    kind = point.get("kind", "check")
    return f"{kind}-timed" if kind == "variant" and timed else kind


@dataclass(eq=False)  # a plugin object: hashed by identity
class Progress:
    config: object
    budget_s: float | None = None
    max_time_s: float = 1.0
    timed_by_case: Counter = field(default_factory=Counter)
    tests_by_case: Counter = field(default_factory=Counter)
    finished_by_case: Counter = field(default_factory=Counter)
    timed: _Tally = field(default_factory=_Tally)
    other: _Tally = field(default_factory=_Tally)
    rounds_s: float = 0.0
    trimmed: list = field(default_factory=list)  # caps below --benchmark-max-time
    started: float = 0.0
    cases_done: int = 0
    enabled: bool = False
    timed_ids: set = field(default_factory=set)
    counted_ids: set = field(default_factory=set)  # the tests the plan counted (not statically skipped)
    _duration: dict = field(default_factory=dict)  # nodeid → seconds of its phases so far
    # The ETA weighs what is left by kind (a timed variant, a pair of ≥20 paired rounds, a check):
    # their costs differ a hundredfold, so one mean per test misjudged a run by minutes.
    planned_by_kind: Counter = field(default_factory=Counter)
    done_by_kind: dict = field(default_factory=dict)  # kind → _Tally
    kind_of: dict = field(default_factory=dict)  # nodeid → kind
    # The previous run's seconds per test (pytest's cache): the best price of a test is what the
    # same test cost last time, scaled by how much slower this run goes so far. The by-kind means
    # stay the fallback: on the first run, and for tests the history lacks.
    history: dict = field(default_factory=dict)  # nodeid → seconds, from the previous run
    took: dict = field(default_factory=dict)  # nodeid → seconds, this run
    last_line_s: float = 0.0  # elapsed seconds at the last progress line

    @classmethod
    def from_config(cls, config) -> Progress:
        max_time = float(config.getoption("benchmark_max_time", 1.0) or 1.0)
        return cls(config, config.getoption("--time-budget"), max_time)

    # plan ------------------------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self.started = time.perf_counter()
        bench = session.config._benchmarksession
        self.enabled = not bench.disabled
        cache = getattr(session.config, "cache", None)
        if cache is not None and self.enabled:
            saved = cache.get(HISTORY_KEY, {})
            self.history = saved if isinstance(saved, dict) else {}
        for item in session.items:
            point = dict(item.user_properties).get("point")
            if point is None or item.get_closest_marker("skip") is not None:
                continue
            self.tests_by_case[point["case"]] += 1
            self.counted_ids.add(item.nodeid)
            if "benchmark" in getattr(item, "fixturenames", ()) and self.enabled:
                self.timed_by_case[point["case"]] += 1
                self.timed_ids.add(item.nodeid)
            kind = _kind(point, item.nodeid in self.timed_ids, item.nodeid)
            self.kind_of[item.nodeid] = kind
            self.planned_by_kind[kind] += 1
        if not self.enabled or not self.timed_by_case:
            return
        timed, tests = sum(self.timed_by_case.values()), sum(self.tests_by_case.values())
        compiles = sum(1 for i in session.items if i.nodeid in self.timed_ids and "-compiled" in i.nodeid)
        ceiling = (
            timed * (self.max_time_s + OVERHEAD_GUESS_S)
            + (tests - timed) * CHECK_GUESS_S
            + compiles * COMPILE_GUESS_S
        )
        budget = f"; --time-budget {self.budget_s:g} s trims the rounds to fit" if self.budget_s else ""
        lines = [
            f"plan: {timed} timed points and {tests - timed} other tests in {len(self.tests_by_case)} "
            f"cases; rounds stop at ±2% on the median or {self.max_time_s:g} s per point; at most "
            f"~{ceiling / 60:.1f} min{budget}",
            "      " + ", ".join(f"{c} {n}" for c, n in sorted(self.timed_by_case.items())),
        ]
        self._write(lines)

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
    def pytest_runtest_logreport(self, report):
        self._duration[report.nodeid] = self._duration.get(report.nodeid, 0.0) + report.duration
        if report.when != "teardown":
            return
        point = dict(report.user_properties).get("point")
        duration = self._duration.pop(report.nodeid, 0.0)
        if point is None or report.nodeid not in self.counted_ids:
            return
        tally = self.timed if report.nodeid in self.timed_ids else self.other
        tally.done += 1
        tally.seconds += duration
        by_kind = self.done_by_kind.setdefault(self.kind_of.get(report.nodeid, "other"), _Tally())
        by_kind.done += 1
        by_kind.seconds += duration
        self.took[report.nodeid] = duration
        case = point["case"]
        self.finished_by_case[case] += 1
        if not (self.enabled and self.timed_by_case):
            return
        elapsed = time.perf_counter() - self.started
        if self.finished_by_case[case] == self.tests_by_case.get(case):
            self.cases_done += 1
            self._write(
                [
                    f"[{self.cases_done}/{len(self.tests_by_case)}] {case}: "
                    f"{self.tests_by_case[case]} tests done; elapsed {_clock(elapsed)}, "
                    f"ETA {_clock(self.eta_s(elapsed))}"
                ]
            )
            self.last_line_s = elapsed
        elif elapsed - self.last_line_s >= HEARTBEAT_S:
            # Cases end late (every case's checks run first, its timed points after), so between
            # case lines the run says where it is at least this often.
            done, planned = len(self.took), len(self.kind_of)
            self._write(
                [f"[{done}/{planned} tests] elapsed {_clock(elapsed)}, ETA {_clock(self.eta_s(elapsed))}"]
            )
            self.last_line_s = elapsed

    def eta_s(self, elapsed: float) -> float:
        """Seconds left: from the previous run's time per test where it covers most of what is left
        (`_eta_from_history`), else each kind's remaining tests at that kind's mean so far, a kind
        not begun yet at its plan price (`guess_s`); both stretched by elapsed over measured, so
        the time between tests counts."""
        done = sum(t.done for t in self.done_by_kind.values())
        if not done:
            return 0.0
        from_history = self._eta_from_history(elapsed)
        if from_history is not None:
            return from_history
        measured = sum(t.seconds for t in self.done_by_kind.values())
        stretch = elapsed / measured if measured > 0 else 1.0  # collection, fixtures, gc between tests
        left = 0.0
        for kind, planned in self.planned_by_kind.items():
            tally = self.done_by_kind.get(kind, _Tally())
            mean = tally.seconds / tally.done if tally.done else self.guess_s(kind)
            left += max(0, planned - tally.done) * mean * stretch
        return left

    def guess_s(self, kind: str) -> float:
        """A kind's price before one of its tests has run: the plan's ceiling for it. Not the mean of
        what ran so far: the suite runs its checks (milliseconds) first, so at 61% of one run's tests
        that mean said 37 s were left of 2.5 min."""
        if kind == "pair":
            return 2 * self.max_time_s + OVERHEAD_GUESS_S  # two ways, interleaved, each to the cap
        if kind.endswith("-timed"):
            return self.max_time_s + OVERHEAD_GUESS_S
        return LAUNCH_GUESS_S if kind == "launch" else CHECK_GUESS_S

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

    def pytest_sessionfinish(self, session):
        cache = getattr(session.config, "cache", None)
        if cache is None or not self.took or not self.enabled:
            return
        cache.set(HISTORY_KEY, {**self.history, **{n: round(s, 4) for n, s in self.took.items()}})

    def pytest_terminal_summary(self, terminalreporter):
        if self.trimmed:
            lowest = min(cap for _, cap in self.trimmed)
            terminalreporter.write_line(
                f"time budget {self.budget_s:g} s: {len(self.trimmed)} points' rounds capped below "
                f"{self.max_time_s:g} s (lowest {lowest:.3g} s); their precision flags say which missed ±2%"
            )

    def _write(self, lines) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        reporter.ensure_newline()
        for line in lines:
            reporter.write_line(line)


def _seconds(value) -> float | None:
    """A price read back from the cache, which a user may have edited: a finite non-negative
    number, else none."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf"):
        return float(value)
    return None


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s"


def progress(config) -> Progress:
    return config.stash[PROGRESS]
