"""Nothing measured is lost when a run is cut short: the pytest glue of `harness.run.results_file`
(the JSON written through a temporary file while signals wait), `harness.run.finished_points` (each
finished point journaled as its test is reported, and the only points a cut-short run keeps; a
worker of `suite/isolation_plugin.py` journals to the file it was given) and `harness.host.signals`
(SIGTERM raised like SIGINT, so pytest's own finish runs and pytest-benchmark writes its JSON).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from harness.host import signals
from harness.run import results_file
from harness.run.finished_points import FinishedPoints
from harness.run.journal import WORKER_JOURNAL_ENV, Journal

PERSIST = pytest.StashKey["Persist"]()
HISTORY_WAIT_S = 10.0  # a run appending itself waits this long for another writer, then says so


@pytest.hookimpl(tryfirst=True)  # before pytest-benchmark's session reads --benchmark-json
def pytest_configure(config):
    config.stash[PERSIST] = Persist(config)
    config.pluginmanager.register(config.stash[PERSIST], "suite-persist")
    config.stash[PERSIST].redirect_results()


def persist(config) -> Persist:
    return config.stash[PERSIST]


def _describe_interrupt(exc: BaseException) -> str:
    if isinstance(exc, signals.Terminated):
        return "SIGTERM"
    if isinstance(exc, pytest.exit.Exception):
        return f"pytest.exit: {exc.msg}"
    if isinstance(exc, pytest.Session.Interrupted):
        return f"stopped: {exc}"
    return "SIGINT (KeyboardInterrupt)"


class Persist:
    def __init__(self, config):
        self.config = config
        self.results: results_file.ResultsFile | None = None
        self.document = results_file.Document(config.hook, config)
        worker = os.environ.pop(WORKER_JOURNAL_ENV, None)
        self.session = None
        self.points = FinishedPoints(
            worker, self.document.header, self.document.own_keys, self._say, self._stop
        )
        self.interrupts = signals.Interrupts()
        self.interrupts.install()
        self.ran = False

    @property
    def journal(self) -> Journal | None:  # a worker's: its events are written into it
        return self.points.journal

    @property
    def final_path(self) -> Path | None:  # where the results JSON goes once the run has ended
        return self.results.target if self.results is not None else None

    @property
    def benchmark_session(self):
        return getattr(self.config, "_benchmarksession", None)

    def redirect_results(self) -> None:
        """pytest-benchmark's --benchmark-json (or the suite's --results) becomes the temporary file
        of a `harness.run.results_file.ResultsFile`. Under pytest-xdist the controller owns the
        file: a worker never takes its lock (it would be refused, and each refused worker replaced
        by another) and writes no JSON of its own; its reports reach the controller's record."""
        if self.points.worker:
            return
        if hasattr(self.config, "workerinput"):  # a pytest-xdist worker
            self.config.option.benchmark_json = None
            return
        try:
            self.results = results_file.redirect(self.config.getoption("--results", None), self.config.option)
        except results_file.ResultsFileBusy as exc:
            raise pytest.UsageError(str(exc)) from None

    def pytest_unconfigure(self, config):
        self.interrupts.restore()
        self.points.close()
        if self.results is not None:
            self.results.close()

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line, yellow=True)

    def _stop(self, why: str) -> None:
        if self.session is not None and not self.session.shouldstop:
            self.session.shouldstop = why  # pytest ends the run after this test: "Interrupted: <why>"

    # the journal ---------------------------------------------------------------------------------
    def pytest_sessionstart(self, session):
        self.session = session
        if self.results is not None and getattr(self.config.option, "numprocesses", None):
            # pytest-benchmark times nothing under pytest-xdist: say what the file will hold.
            self._say(
                f"results: timing is off under pytest-xdist (-n); {self.results.target} will hold "
                "this run's checks and outcomes only (run without -n to time)"
            )
        self.points.start(self.benchmark_session, self.final_path)

    def add_recorded(self, row: dict) -> None:  # a point an isolation worker measured
        self.points.add_recorded(row, self.benchmark_session)

    @pytest.hookimpl(tryfirst=True)
    def pytest_benchmark_generate_machine_info(self, config):
        return self.document.machine_info()  # None before the first header: the others answer

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "call":
            self.points.call_ended(item.nodeid, (getattr(item, "funcargs", None) or {}).get("benchmark"))
        return report

    @pytest.hookimpl(trylast=True)  # after the run's record has taken the outcome
    def pytest_runtest_logreport(self, report):
        self.ran = True  # a test ran (or was skipped): the run has outcomes to write
        if report.when == "call":
            self.points.reported(report.nodeid)

    def pytest_runtest_logstart(self, nodeid):
        self.interrupts.running = nodeid

    def pytest_runtest_logfinish(self, nodeid):
        self.interrupts.running = None

    # the end -------------------------------------------------------------------------------------
    def pytest_keyboard_interrupt(self, excinfo):
        # Refines what the signal handler recorded as the signal arrived: by now the events an
        # isolation worker streams have been taken in, so `running` names the interrupted test.
        self.interrupts.note(_describe_interrupt(excinfo.value))

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: before pytest-benchmark writes, after it wrote
    def pytest_sessionfinish(self, session):
        if not self.ran and self.results is not None:
            # A session that ran no test (--collect-only, suite.estimate, nothing selected, every
            # xdist worker lost) has no results: the file stays as it was, the history untouched.
            result = yield
            self.results.discard()
            self._say(f"results: no test ran; {self.results.target} was left as it was")
            return result
        self.points.keep(self.benchmark_session, bool(self.interrupts.reason))
        result = None
        with results_file.writing(self.results, self.document.empty, self.points.settle, self._say) as failed:
            result = yield
        if failed.reason and session.exitstatus == pytest.ExitCode.OK:
            # the run's results are not where it said they would be
            session.exitstatus = (
                pytest.ExitCode.INTERRUPTED if failed.interrupted else pytest.ExitCode.INTERNAL_ERROR
            )
        elif not self.interrupts.reason:
            self.append_to_history()
        return result

    def append_to_history(self) -> None:
        """A finished run written with --results joins the history (reports.history): --history
        PATH, else history.sqlite beside the results; --no-history skips it. A history that cannot
        take it (damaged, another program's file) is said in one line; the results stay written."""
        target = self.final_path
        if (
            target is None
            or not self.config.getoption("--results", None)
            or self.config.getoption("--no-history", False)
            or not Path(target).is_file()
        ):
            return
        if self.config.getoption("--shard", None):
            self._say(
                "history: a shard is not a run; merge the shards (python -m reports merge) and add the "
                "merged file (python -m reports history add)"
            )
            return
        from reports.history import ingest, store
        from reports.load import ResultsError

        path = Path(self.config.getoption("--history", None) or Path(target).parent / store.FILENAME)
        try:
            added = ingest.add_files(path, [target], wait_s=HISTORY_WAIT_S)[0]
        except (ResultsError, OSError, sqlite3.Error, KeyboardInterrupt, signals.Terminated) as exc:
            # A history that cannot take the run (read-only, full, locked by another writer, not a
            # history) never turns a finished run red: the results are written already.
            self._say(
                f"history: not appended to {path} "
                f"({store.describe_error(exc) if str(exc) else type(exc).__name__}); "
                f"add it later: python -m reports history add {target}"
            )
            return
        self._say(f"history: run {added.run_id} {'appended to' if added.new else 'already in'} {path}")

    @pytest.hookimpl(trylast=True)  # after the hook that builds `suite`, into the dict it built
    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        self.points.mark_partial(output_json, self.interrupts.reason)
