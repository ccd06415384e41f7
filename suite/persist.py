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

import copy
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from harness import journal as journals
from harness import signals
from harness.journal import WORKER_JOURNAL_ENV

PERSIST = pytest.StashKey["Persist"]()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt."""


@pytest.hookimpl(tryfirst=True)  # before pytest-benchmark's session reads --benchmark-json
def pytest_configure(config):
    config.stash[PERSIST] = Persist(config)
    config.pluginmanager.register(config.stash[PERSIST], "suite-persist")
    config.stash[PERSIST].redirect_results()


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
        self.final_path: Path | None = None  # where the results JSON goes once the run has ended
        self.tmp_path: Path | None = None
        self._lock = None
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
        self._sigint_before = None
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:  # never replace someone else's handler
                self._sigterm_before = signal.signal(signal.SIGTERM, self._on_signal)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self._sigint_before = signal.signal(signal.SIGINT, self._on_signal)

    @property
    def benchmark_session(self):
        return getattr(self.config, "_benchmarksession", None)

    # the results file ----------------------------------------------------------------------------
    def redirect_results(self) -> None:
        """pytest-benchmark writes its JSON into the file handle of --benchmark-json; the suite's
        --results gives it one too. Either way the handle becomes a temporary file beside the
        target, renamed over it when the run ends (`_finish_results`): a reader never sees a half
        file, and with --results the previous file stays until then. A lock on the target keeps a
        second run from writing into the same path at the same time."""
        if self.worker_journal:
            return
        option = self.config.getoption("--results", None)
        handle = getattr(self.config.option, "benchmark_json", None)
        if option:
            target = Path(option)
        elif handle is not None and hasattr(handle, "name"):
            target = Path(handle.name)
        else:
            return
        target = Path(os.path.abspath(target))
        target.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _lock(target)
        if handle is not None:
            handle.close()  # pytest-benchmark's own handle on the target (already truncated by it)
        self.final_path = target
        self.tmp_path = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        self.config.option.benchmark_json = open(self.tmp_path, "wb")  # noqa: SIM115  (written by pytest-benchmark)

    def _finish_results(self) -> None:
        """The temporary JSON renamed over the target; where pytest-benchmark wrote nothing (no
        point was timed: a run of checks, or --benchmark-disable), the run's own record is
        written instead, so outcomes and findings are never lost."""
        if self.tmp_path is None:
            return
        handle = getattr(self.config.option, "benchmark_json", None)
        if handle is not None and not handle.closed:
            handle.close()
        if _points_in(self.tmp_path) < 0:
            doc = self._header()
            self.config.hook.pytest_benchmark_update_json(config=self.config, benchmarks=[], output_json=doc)
            self.tmp_path.write_text(json.dumps(doc, indent=4, default=str), encoding="utf-8")
        os.replace(self.tmp_path, self.final_path)
        self.tmp_path = None

    def _on_signal(self, signum, frame):
        """Every interrupt is recorded before it is raised: a second Ctrl-C that lands while
        pytest handles the first (0.3 s apart once wrote a JSON marked complete, holding a point
        measured halfway) must still leave the run marked partial and the point out."""
        if not self.interrupted:
            self.interrupted = signal.Signals(signum).name
            if self.running:
                self.interrupted += f" while {self.running} was running"
        if signum == signal.SIGTERM:
            raise Terminated("SIGTERM")
        raise KeyboardInterrupt

    def pytest_unconfigure(self, config):
        if self._sigterm_before is not None:
            signal.signal(signal.SIGTERM, self._sigterm_before)
        if self._sigint_before is not None:
            signal.signal(signal.SIGINT, self._sigint_before)
        if self.journal is not None:
            self.journal.close()
        if self.tmp_path is not None:  # the session never finished (a usage error, a crash)
            self.tmp_path.unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.close()

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
        # Refines what _on_signal recorded as the signal arrived: by now the events an isolation
        # worker streams have been taken in, so `running` names the test that was interrupted.
        self.interrupted = _describe_interrupt(excinfo.value)
        if self.running:
            self.interrupted += f" while {self.running} was running"

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: before pytest-benchmark writes, after it wrote
    def pytest_sessionfinish(self, session):
        self._leave_out_unfinished()
        with signals.held(redeliver=False) as held:
            try:
                return (yield)
            finally:
                self._finish_results()
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
            if self.journal.error:
                lines.append(
                    f"the journal could not be written ({self.journal.error}); "
                    "the results JSON has every point"
                )
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


def _lock(target: Path):
    """An exclusive lock on ``<target>.lock`` for the run's length, or a usage error naming the
    run that holds it: two runs writing one results file would lose each other's points."""
    import fcntl

    handle = open(target.with_name(target.name + ".lock"), "a+")  # noqa: SIM115  (held for the run)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another run"
        handle.close()
        raise pytest.UsageError(
            f"{target}: {holder} is writing this results file; give this run another path"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def _rounds(point) -> int:
    if isinstance(point, RecordedBenchmark):
        return int((point.row.get("stats") or {}).get("rounds") or 0)
    return len(point.stats.data)


def _points_in(path: Path | None) -> int:
    try:
        return len(json.loads(path.read_text(encoding="utf-8"))["benchmarks"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return -1  # missing, empty, truncated: the journal has to stay
