"""Nothing measured is lost when a run is cut short: the pytest glue of `harness.results_file`
(the results JSON written through a temporary file, a run cut short marked partial and its
unfinished point left out), `harness.journal` (each finished point appended as its call phase
ends; a worker of `suite/isolation_plugin.py` journals to the file it was given) and `harness.signals`
(SIGTERM raised like SIGINT, so pytest's own finish runs and pytest-benchmark writes its JSON; a
signal that arrives while the JSON is written waits until it is written).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from harness import journal as journals
from harness import results_file, signals
from harness.journal import WORKER_JOURNAL_ENV

PERSIST = pytest.StashKey["Persist"]()


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
        self.worker_journal = os.environ.pop(WORKER_JOURNAL_ENV, None)
        self.journal: journals.Journal | None = None
        self.json_path: Path | None = None
        self.finished: set[int] = set()  # id() of the Metadata of every point whose call phase ended
        self.pending: dict[str, object] = {}  # node ID → its point, from makereport to logreport
        self.left_out: list[str] = []
        self._machine: dict | None = None
        self.interrupts = signals.Interrupts()
        self.interrupts.install()

    @property
    def final_path(self) -> Path | None:  # where the results JSON goes once the run has ended
        return self.results.target if self.results is not None else None

    @property
    def benchmark_session(self):
        return getattr(self.config, "_benchmarksession", None)

    def redirect_results(self) -> None:
        """pytest-benchmark's handle of --benchmark-json (or the suite's --results) becomes the
        temporary file of a `harness.results_file.ResultsFile`."""
        if self.worker_journal:
            return
        option = self.config.getoption("--results", None)
        handle = getattr(self.config.option, "benchmark_json", None)
        if not option and not hasattr(handle, "name"):
            return
        try:
            self.results = results_file.ResultsFile(option or handle.name)
        except results_file.ResultsFileBusy as exc:
            raise pytest.UsageError(str(exc)) from None
        if handle is not None:
            handle.close()  # pytest-benchmark's own handle on the target (already truncated by it)
        self.config.option.benchmark_json = self.results.open()

    def pytest_unconfigure(self, config):
        self.interrupts.restore()
        if self.journal is not None:
            self.journal.close()
        if self.results is not None:
            self.results.close()

    # the journal ---------------------------------------------------------------------------------
    def pytest_sessionstart(self, session):
        bs = self.benchmark_session
        if self.worker_journal:
            self.journal = journals.Journal(self.worker_journal)  # events flow through it from the start
        elif bs is not None and bs.json is not None and not bs.disabled:
            self.json_path = self.final_path or Path(os.path.abspath(bs.json.name))

    def _open(self) -> journals.Journal | None:
        if self.journal is None and self.json_path is not None:
            self.journal = journals.Journal(journals.path_for(self.json_path))
            if self.journal.kept is not None:
                self._say(
                    f"a journal left by an earlier run was kept as {self.journal.kept}; "
                    f"rebuild its results with: python -m harness.journal {self.journal.kept}"
                )
        return self.journal

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line, yellow=True)

    def add_row(self, row: dict) -> None:
        """Journal one finished point (dict as in pytest-benchmark's ``benchmarks[]``)."""
        journal = self._open()
        if journal is None:
            return
        if not self.worker_journal:  # a worker's points go under the header of the process that started it
            if not journal.has_header:
                journal.header(self._header())
            self._journal_extras()  # first: a point in the journal always has its outcome there too
        journal.benchmark(row)

    def add_recorded(self, row: dict) -> None:
        """A point another process measured for this run: into this session's benchmarks (so the
        one JSON, the table and --benchmark-compare have it) and into the journal."""
        bs = self.benchmark_session
        if bs is not None:
            bs.benchmarks.append(results_file.RecordedBenchmark(row))
        self.add_row(row)

    def _header(self) -> dict:
        config = self.config
        self._machine = config.hook.pytest_benchmark_generate_machine_info(config=config)
        machine_info = copy.deepcopy(self._machine)
        config.hook.pytest_benchmark_update_machine_info(config=config, machine_info=machine_info)
        commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
        config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
        return config.hook.pytest_benchmark_generate_json(
            config=config,
            benchmarks=[],
            include_data=True,
            machine_info=machine_info,
            commit_info=commit_info,
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_benchmark_generate_machine_info(self, config):
        # The machine does not change within a run: the header's description is reused for the
        # JSON rather than asking cpuinfo again (over a second on a loaded 2-core machine).
        return copy.deepcopy(self._machine) if self._machine is not None else None

    def _journal_extras(self) -> None:
        # The run's own keys (suite, cases, outcomes) as the hooks that fill the JSON give them
        # now, so a journal rebuilt after a hard death has the outcomes too.
        scratch: dict = {}
        self.config.hook.pytest_benchmark_update_json(config=self.config, benchmarks=[], output_json=scratch)
        self.journal.extras(scratch)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "call":
            fixture = (getattr(item, "funcargs", None) or {}).get("benchmark")
            point = getattr(fixture, "stats", None)
            if point is not None and point and not fixture.has_error:
                self.finished.add(id(point))
                self.pending[item.nodeid] = point
        return report

    @pytest.hookimpl(trylast=True)  # after the run's record has taken the outcome
    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        point = self.pending.pop(report.nodeid, None)
        if point is not None:
            self.add_row(point.as_dict(include_data=True))
        elif self.journal is not None and self.journal.has_header:
            self._journal_extras()

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
        bs = self.benchmark_session
        if bs is not None:
            bs.benchmarks[:], self.left_out = results_file.keep_finished(
                bs.benchmarks, self.finished, bool(self.interrupts.reason)
            )
        with signals.held(redeliver=False) as held:
            try:
                return (yield)
            finally:
                if self.results is not None:
                    self.results.commit(self.config.option.benchmark_json, self._empty_results)
                journal = None if self.worker_journal else self.journal
                for line in results_file.settle_journal(journal, self.json_path, held):
                    self._say(line)

    def _empty_results(self) -> dict:
        doc = self._header()
        self.config.hook.pytest_benchmark_update_json(config=self.config, benchmarks=[], output_json=doc)
        return doc

    @pytest.hookimpl(trylast=True)  # after the hook that builds `suite`, into the dict it built
    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        if self.interrupts.reason:
            journals.mark_partial(
                output_json, results_file.partial_reason(self.interrupts.reason, self.left_out)
            )
