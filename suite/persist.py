"""Nothing measured is lost when a run is cut short: the pytest glue of `harness.journal`.

* Each finished benchmark point is appended to the journal beside ``--benchmark-json`` when its
  test's call phase ends (a worker of `suite.isolation` journals to the file it was given).
* SIGTERM (a CI timeout, a scheduler, ``timeout``) raises KeyboardInterrupt like SIGINT does, so
  pytest's own finish runs and pytest-benchmark writes its JSON instead of the process dying.
* On an interrupt the point in progress is left out of the JSON: it has too few rounds, its
  extra_info is incomplete, and one with no round at all made pytest-benchmark's writer crash
  (``min() iterable argument is empty``) and leave an empty file. The JSON says ``suite.partial``
  and why (the key `harness.record.RunInfo` defines).
* A SIGINT/SIGTERM that arrives while the JSON is being written waits until it is written.
* Once the JSON holds every journaled point the journal is removed; if it does not (the process
  died, the writer failed), the journal stays and the run prints the command that rebuilds the
  JSON from it: ``python -m harness.journal JOURNAL``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from harness import journal as journals
from harness.journal import WORKER_JOURNAL_ENV

PERSIST = pytest.StashKey["Persist"]()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt."""


def _raise_terminated(signum, frame):
    raise Terminated(signal.Signals(signum).name)


def pytest_configure(config):
    config.stash[PERSIST] = Persist(config)
    config.pluginmanager.register(config.stash[PERSIST], "suite-persist")


def persist(config) -> Persist:
    return config.stash[PERSIST]


class RecordedBenchmark:
    """A finished point measured by another process (an isolation worker), shaped like
    pytest-benchmark's `Metadata` in what its JSON writer, summary table and --benchmark-compare
    read, so the run's one JSON and table hold it like a point of this session."""

    has_error = False

    def __init__(self, row: dict):
        self.row = row
        for key in ("name", "fullname", "group", "param", "params", "extra_info"):
            setattr(self, key, row.get(key))

    def __bool__(self):
        return bool((self.row.get("stats") or {}).get("rounds"))

    def __getitem__(self, key):
        stats = self.row.get("stats") or {}
        return stats[key] if key in stats else self.row[key]

    def as_dict(self, include_data=True, flat=False, stats=True, cprofile=None):
        out = {k: v for k, v in self.row.items() if k != "stats"}
        if stats:
            values = dict(self.row.get("stats") or {})
            if not include_data:
                values.pop("data", None)
            if flat:
                out.update(values)
            else:
                out["stats"] = values
        return out


def _describe_interrupt(exc: BaseException) -> str:
    if isinstance(exc, Terminated):
        return "SIGTERM"
    if isinstance(exc, pytest.exit.Exception):
        return f"pytest.exit: {exc.msg}"
    if isinstance(exc, pytest.Session.Interrupted):
        return f"stopped: {exc}"
    return "SIGINT (KeyboardInterrupt)"


class Persist:
    def __init__(self, config):
        self.config = config
        self.worker_journal = os.environ.pop(WORKER_JOURNAL_ENV, None)
        self.journal: journals.Journal | None = None
        self.json_path: Path | None = None
        self.finished: set[int] = set()  # id() of the Metadata of every point whose call phase ended
        self.pending: dict[str, object] = {}  # node ID → its point, from makereport to logreport
        self.running: str | None = None
        self.interrupted = ""  # why the run was cut short, or "" while it was not
        self.left_out: list[str] = []
        self._machine: dict | None = None
        self._sigterm_before = None
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        ):  # never replace someone else's handler
            self._sigterm_before = signal.signal(signal.SIGTERM, _raise_terminated)

    @property
    def benchmark_session(self):
        return getattr(self.config, "_benchmarksession", None)

    def pytest_unconfigure(self, config):
        if self._sigterm_before is not None:
            signal.signal(signal.SIGTERM, self._sigterm_before)
        if self.journal is not None:
            self.journal.close()

    # the journal ---------------------------------------------------------------------------------
    def pytest_sessionstart(self, session):
        bs = self.benchmark_session
        if self.worker_journal:
            self.journal = journals.Journal(self.worker_journal)  # events flow through it from the start
        elif bs is not None and bs.json is not None and not bs.disabled:
            self.json_path = Path(os.path.abspath(bs.json.name))

    def _open(self) -> journals.Journal | None:
        if self.journal is None and self.json_path is not None:
            self.journal = journals.Journal(journals.path_for(self.json_path))
        return self.journal

    def add_row(self, row: dict) -> None:
        """Journal one finished point (dict as in pytest-benchmark's ``benchmarks[]``)."""
        journal = self._open()
        if journal is None:
            return
        if self.worker_journal:  # the process that started this worker journals it with its own header
            journal.benchmark(row)
            return
        if not journal.has_header:
            journal.header(self._header())
        self._journal_extras()  # first: a point in the journal always has its outcome there too
        journal.benchmark(row)

    def add_recorded(self, row: dict) -> None:
        """A point another process measured for this run: into this session's benchmarks (so the
        one JSON, the table and --benchmark-compare have it) and into the journal."""
        bs = self.benchmark_session
        if bs is not None:
            bs.benchmarks.append(RecordedBenchmark(row))
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
        self.running = nodeid

    def pytest_runtest_logfinish(self, nodeid):
        self.running = None

    # interrupts ----------------------------------------------------------------------------------
    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = _describe_interrupt(excinfo.value)
        if self.running:
            self.interrupted += f" while {self.running} was running"

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: before pytest-benchmark writes, after it wrote
    def pytest_sessionfinish(self, session):
        self._leave_out_unfinished()
        with _signals_held() as held:
            try:
                return (yield)
            finally:
                self._settle_journal(held)

    def _leave_out_unfinished(self) -> None:
        bs = self.benchmark_session
        if bs is None:
            return
        kept = []
        for point in bs.benchmarks:
            done = isinstance(point, RecordedBenchmark) or id(point) in self.finished
            if point and (done or not self.interrupted):
                kept.append(point)
            else:
                self.left_out.append(f"{point.name} ({_rounds(point)} rounds)")
        bs.benchmarks[:] = kept

    @pytest.hookimpl(trylast=True)  # after the hook that builds `suite`, into the dict it built
    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        if not self.interrupted:
            return
        reason = self.interrupted
        if self.left_out:
            reason += f"; left out, unfinished: {', '.join(self.left_out)}"
        suite = output_json.setdefault("suite", {})
        suite["partial"] = True
        suite["partial_reason"] = reason

    def _settle_journal(self, held: list[int]) -> None:
        lines = []
        if held:
            names = ", ".join(signal.Signals(s).name for s in held)
            lines.append(f"{names} arrived while the results were being written; held until they were")
        if self.journal is not None and not self.worker_journal:
            self.journal.close()
            path = self.journal.path
            if _points_in(self.json_path) >= self.journal.benchmarks:
                path.unlink(missing_ok=True)
            else:
                lines.append(
                    f"{self.json_path} does not hold the {self.journal.benchmarks} points the run "
                    f"finished; rebuild it from the journal: python -m harness.journal {path}"
                )
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        for line in lines:
            if reporter is not None:
                reporter.write_line(line, yellow=True)


def _rounds(point) -> int:
    if isinstance(point, RecordedBenchmark):
        return int((point.row.get("stats") or {}).get("rounds") or 0)
    return len(point.stats.data)


def _points_in(path: Path | None) -> int:
    try:
        return len(json.loads(path.read_text(encoding="utf-8"))["benchmarks"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return -1  # missing, empty, truncated: the journal has to stay


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM recorded instead of raised while the results are written: a second
    Ctrl-C or a `timeout` that fires at the end would otherwise cut the one write short. A third
    signal still interrupts, so a finish that hangs can be stopped."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def hold(signum, frame):
        held.append(signum)
        if len(held) >= 3:
            raise KeyboardInterrupt

    before = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield held
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
