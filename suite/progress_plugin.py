"""The pytest glue of `harness.run.progress` (the run's plan, progress lines with an ETA, and
`--time-budget`): it hands over the collected tests and each finished test's duration, writes the
lines it gets back and keeps the time per test in pytest's cache for the next run's ETA.

A pytest plugin object on the config; `progress(config)` is the run's `harness.run.progress.Progress`,
which the timed tests ask for their rounds' cap.
"""

from __future__ import annotations

import pytest

from harness.measure.timing import ReplayClock
from harness.run.progress import Progress
from plan import LaunchPoint, PairPoint, VariantPoint, point_of
from suite import options

PROGRESS = pytest.StashKey["ProgressPlugin"]()
HISTORY_KEY = "suite/durations"  # pytest's cache: nodeid → seconds of the last run that timed it


class ProgressPlugin:
    def __init__(self, config):
        self.config = config
        max_time = options.max_time_s(config)
        self.progress = Progress(config.getoption("--time-budget"), max_time)
        self._duration: dict[str, float] = {}  # nodeid → seconds of its phases so far

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self.progress.enabled = not session.config._benchmarksession.disabled
        cache = getattr(session.config, "cache", None)
        history = cache.get(HISTORY_KEY, {}) if cache is not None and self.progress.enabled else {}
        pair_rounds = session.config.pluginmanager.get_plugin("suite-pair-rounds")  # suite/pair_rounds.py
        tests = [
            (
                item.nodeid,
                point,
                "benchmark" in getattr(item, "fixturenames", ()),
                _launches(item),
                _pair_rounds_of(item, pair_rounds),
            )
            for item in session.items
            if (point := dict(item.user_properties).get("point")) is not None
            and item.get_closest_marker("skip") is None
        ]
        self._write(self.progress.plan(tests, history))

    def pytest_runtest_logreport(self, report):
        self._duration[report.nodeid] = self._duration.get(report.nodeid, 0.0) + report.duration
        if report.when != "teardown":
            return
        point = dict(report.user_properties).get("point")
        seconds = self._duration.pop(report.nodeid, 0.0)
        if point is not None:
            self._write(self.progress.finished(report.nodeid, point["case"], seconds))

    def pytest_sessionfinish(self, session):
        cache = getattr(session.config, "cache", None)
        history = self.progress.history_to_keep()
        if cache is not None and history is not None:
            cache.set(HISTORY_KEY, history)

    def pytest_terminal_summary(self, terminalreporter):
        for line in self.progress.summary():
            terminalreporter.write_line(line)

    def _write(self, lines) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or not lines:
            return
        reporter.ensure_newline()
        for line in lines:
            reporter.write_line(line)


def _launches(item) -> bool:
    return isinstance(point_of(item), LaunchPoint)


def _pair_rounds_of(item, pair_rounds) -> str | None:
    """The ID of the timed pair whose rounds `item` times or reads: a pair's own test, or a side
    whose rows are the pair's rounds replayed (suite/pair_rounds.py gave its benchmark a
    ReplayClock; a launch's benchmark has one too, and is priced as a launch); else None."""
    point = point_of(item)
    if isinstance(point, PairPoint):
        return point.id
    marker = item.get_closest_marker("benchmark")
    timer = marker.kwargs.get("timer") if marker is not None else None
    if not (isinstance(point, VariantPoint) and isinstance(timer, ReplayClock)) or pair_rounds is None:
        return None
    pair = pair_rounds.side_pair(point)
    return pair.id if pair is not None else None


def progress(config) -> Progress:
    return config.stash[PROGRESS].progress
