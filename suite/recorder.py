"""The run's record, the pytest glue: markers and skips from each point's requirements, every suite
test's outcome and finding (`harness.contract.record.Outcome`), the cases' declarations
(`harness.contract.declared`) and what the run measured of the machine
(`harness.machine.machine_measures`) into the results JSON, and the run's answer
(`reports.answer`) at its end.

A pytest plugin object registered on the config (``config.stash[RECORDER]``), so its state lives
and dies with one pytest session.
"""

from __future__ import annotations

import pytest

import plan
from cases import all_cases
from harness.contract import declared, gain, record
from harness.machine.machine_measures import MachineMeasures
from harness.point import marks
from harness.point.marks import NOT_A_BENCHMARK
from reports import answer
from suite import options

RECORDER = pytest.StashKey["Recorder"]()


class Recorder:
    def __init__(self, config):
        self.config = config
        self.outcomes: list[record.Outcome] = []
        self.machine = MachineMeasures(options.devices(config))  # into machine_info (root conftest)
        self.pairs: list[record.PairTiming] = []
        # The JSON's rows, each made once as its test is reported: the journal asks for the run's
        # own keys after every test (harness.run.finished_points), and making them all afresh each
        # time (the catalogue read again, every outcome and pair serialised again) grew with the
        # square of the run's length: 12 s of a 5-minute quick run (py-spy, 2-core Xeon).
        self._outcome_rows: list[dict] = []
        self._pair_rows: list[dict] = []
        self._case_rows: dict | None = None

    @pytest.hookimpl(tryfirst=True)  # before `-m` selects by the markers added here
    def pytest_collection_modifyitems(self, config, items):
        """Markers from each point's declaration (harness.point.marks), for `-m` to select by."""
        points = [(item, point) for item in items if (point := plan.point_of(item)) is not None]
        cpu_only = plan.cpu_only_cases(point for _, point in points)
        for item, point in points:
            described = point.key.to_data()  # plain data: a worker's events carry it across processes
            for name in marks.names_of(point, point.key.role):
                item.add_marker(getattr(pytest.mark, name))
            if point.key.case in cpu_only:  # the GPU command (`-m gpu`) runs it on the host's CPU
                item.add_marker(pytest.mark.gpu)
            item.user_properties.append(("point", described))

    @pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_after_selection(self, config, items):
        """Skips and clocks from the requirements of the points `-k` and `-m` left: a requirement's
        probe (torch.compile's takes ~3 s) runs only in a run that will run a point needing it."""
        for item in items:
            point = plan.point_of(item)
            if point is None:
                continue
            timed = "benchmark" in getattr(item, "fixturenames", ())
            _, skip, clock = marks.of(point, point.key.role, timed)
            if skip:
                # Ahead of pytest-benchmark's own skips: the requirement is the reason recorded.
                item.add_marker(pytest.mark.skip(reason=skip), append=False)
            elif clock is not None:
                item.add_marker(pytest.mark.benchmark(timer=clock))

    @pytest.hookimpl(trylast=True)  # after pytest-benchmark has marked what --benchmark-only skips
    def pytest_collection_finish(self, session):
        keyword = session.config.getoption("keyword", "")
        if keyword and not session.items:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    f"-k {keyword!r} matched no test; {declared.nearest_ids(keyword)}", yellow=True
                )
        for item in session.items:
            point = dict(item.user_properties).get("point")
            if point is not None and point["kind"] in ("check", "pair"):
                _keep_under_benchmark_only(item)

    def pytest_runtest_logreport(self, report):
        """Every suite test's outcome (with its point and any finding) goes into the results JSON,
        so the reports know which checks failed and which sizes were skipped, and why."""
        outcome = record.Outcome.of_report(report)
        if outcome is None:
            return
        pair = dict(report.user_properties).get("pair")
        if report.when == "call" and report.passed and pair is not None:
            self.pairs.append(record.PairTiming.from_data(pair))
            self._pair_rows.append(self.pairs[-1].to_data())
        self.outcomes.append(outcome)
        self._outcome_rows.append(outcome.to_data())

    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        info = record.RunInfo(
            profile=config.getoption("--profile"),
            devices=options.devices(config),
            seed=config.getoption("--seed"),
            delta_floor=gain.DELTA_FLOOR,
        )
        output_json["suite"] = {**(output_json.get("suite") or {}), **info.to_data()}
        if self._case_rows is None:  # the declarations do not change within a run
            self._case_rows = {cid: c.to_data() for cid, c in declared.case_infos(all_cases()).items()}
        # Copies of the lists: the JSON's writer and the journal hold them while more rows arrive.
        output_json["cases"] = self._case_rows
        output_json["outcomes"] = list(self._outcome_rows)
        output_json["pairs"] = list(self._pair_rows)

    def pytest_sessionstart(self, session):
        # pytest-benchmark's tables off unless asked for (its --benchmark-quiet, minus its logger)
        bs = getattr(session.config, "_benchmarksession", None)
        if bs is not None and not session.config.getoption("--benchmark-tables") and not bs.verbose:
            bs.quiet = True  # display() then prints no table; its logger is left as it was

    def pytest_terminal_summary(self, terminalreporter):
        """The run's answer on one screen; failed tests are counted apart: they are errors, not
        findings."""
        persist = self.config.pluginmanager.get_plugin("suite-persist")
        path = getattr(persist, "final_path", None)
        bs = getattr(self.config, "_benchmarksession", None)
        if path is None and bs is not None and getattr(bs, "json", None) is not None:
            path = bs.json.name
        text = answer.lines(
            self.pairs, self.outcomes, str(path) if path else None, declared.case_infos(all_cases())
        )
        if text:
            terminalreporter.section("what this run found")
            for line in text:
                terminalreporter.write_line(line)


def _keep_under_benchmark_only(item) -> None:
    """`pytest suite -m gpu --benchmark-only` is the command GPU users run: without its rule checks
    the report could give no verdict to the Tier-3 claims. Variant checks need no such help: each
    benchmark checks its variant against the oracle before timing it."""
    item.own_markers[:] = [
        m
        for m in item.own_markers
        if not (m.name == "skip" and str(m.kwargs.get("reason", "")).startswith(NOT_A_BENCHMARK))
    ]


def recorder(config) -> Recorder:
    return config.stash[RECORDER]
