"""A sticky CUDA error fails its own test only: the pytest glue of `harness.isolation` (which says
why this mechanism: the rest of the run moves to a fresh worker process).

In every process:

* after each test's call, CUDA is synchronized, so an asynchronous error (a kernel's assert) fails
  the test that launched the kernel; after each failed test phase the context is probed;
* a dead context's failure gets the kernel's own assert text (``Assertion `...` failed``, from the
  captured stderr) into its message, which `outcomes[]` keeps as the reason;
* from the next test on, nothing more runs here: the remaining node IDs go to a worker (``python
  -m pytest``, the same arguments), whose reports are replayed here as they arrive (terminal,
  exit status, junit XML, `outcomes[]`) and whose finished points join this session's
  pytest-benchmark JSON (`suite.persist.add_recorded`). ``suite.isolation`` in the JSON lists
  each hand-over.

In a worker (started with `harness.isolation.WORKER_NODEIDS_ENV`), only the node IDs handed over
run, and every test event goes into the worker's journal for the process that started it.

``--no-isolation`` keeps every test in the first process (later CUDA tests then fail with the same
error); so does ``--pdb`` (a worker has no terminal to debug in) and a pytest-xdist worker (its
arguments are the controller's, and pytest-benchmark is off under xdist anyway).
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from harness import isolation
from suite.persist import persist

ISOLATION = pytest.StashKey["Isolation"]()
POLL_S = 0.05


def pytest_addoption(parser):
    parser.getgroup("suite").addoption(
        "--no-isolation",
        action="store_true",
        default=False,
        help="after a sticky CUDA error (device-side assert, illegal address) keep running the "
        "remaining tests in this process instead of a fresh worker; they then fail with the same error",
    )


def pytest_configure(config):
    config.stash[ISOLATION] = Isolation(config)
    config.pluginmanager.register(config.stash[ISOLATION], "suite-isolation")


@dataclass
class _Followed:
    """What one worker has reported so far."""

    started: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    phases: dict[str, set[str]] = field(default_factory=dict)
    running: str | None = None
    # Read from the worker's journal, not yet replayed: an interrupt in the middle of a batch
    # must not drop the rest of it.
    queue: deque = field(default_factory=deque)


class Isolation:
    def __init__(self, config):
        self.config = config
        self.context = isolation.Context.from_environ()
        ids_file = os.environ.pop(isolation.WORKER_NODEIDS_ENV, None)
        self.worker_nodeids = Path(ids_file).read_text(encoding="utf-8").splitlines() if ids_file else None
        self.enabled = not (
            config.getoption("--no-isolation")
            or config.getoption("usepdb")
            or os.environ.get("PYTEST_XDIST_WORKER")
        )
        self.dead: tuple[str, str] | None = None  # (node ID, error) once the context is dead
        self.handed_over: set[str] = set()
        self.hand_overs: list[dict] = []
        if self.worker_nodeids is not None:
            isolation.watch_parent()

    @property
    def is_worker(self) -> bool:
        return self.worker_nodeids is not None

    # a worker runs the node IDs it was given, in the first process's order ----------------------
    @pytest.hookimpl(trylast=True)  # after -k/-m and every other selection
    def pytest_collection_modifyitems(self, config, items):
        if not self.is_worker:
            return
        wanted = set(self.worker_nodeids)
        kept = [item for item in items if item.nodeid in wanted]
        dropped = [item for item in items if item.nodeid not in wanted]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    def pytest_runtest_logstart(self, nodeid, location):
        if self.is_worker:
            persist(self.config).journal.write({"kind": "logstart", "nodeid": nodeid, "location": location})

    def pytest_runtest_logreport(self, report):
        if self.is_worker:
            data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
            persist(self.config).journal.write({"kind": "report", "report": data})

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.is_worker:
            persist(self.config).journal.write({"kind": "logfinish", "nodeid": nodeid, "location": location})

    # the context ---------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True, trylast=True)  # inside output capture: the driver's assert text is kept
    def pytest_runtest_call(self, item):
        self.context.before_call(item.nodeid)
        result = yield
        self.context.after_call()
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and self.dead is None:
            error = self.context.error()
            if error is not None:
                self.dead = (item.nodeid, error)
                _explain(report, error, self.enabled)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if item.nodeid in self.handed_over:
            return True  # its reports came from a worker
        if self.dead is None or not self.enabled:
            return None
        items = item.session.items
        rest = items[items.index(item) :]
        self.handed_over.update(i.nodeid for i in rest)
        self._run_in_workers(item.session, rest)
        return True

    # workers -------------------------------------------------------------------------------------
    def _run_in_workers(self, session, rest) -> None:
        nodeid, error = self.dead
        first_line = error.strip().splitlines()[0] if error.strip() else error
        self._say(
            f"sticky CUDA error in {nodeid} ({first_line}): the {len(rest)} tests after it run "
            f"in a fresh worker process"
        )
        _release_device_memory()
        folder = Path(tempfile.mkdtemp(prefix="suite-isolation-"))
        by_id = {item.nodeid: item for item in rest}
        remaining, crashed = list(rest), False
        hand_over = {"after": nodeid, "error": first_line, "tests": len(rest), "workers": 0}
        self.hand_overs.append(hand_over)  # before the workers' own, which arrive while they run
        try:
            while remaining and not (session.shouldfail or session.shouldstop):
                hand_over["workers"] += 1
                remaining, died = self._one_worker(hand_over["workers"], remaining, folder, session, by_id)
                crashed = crashed or died
        finally:
            if self.is_worker:
                persist(self.config).journal.write({"kind": "hand_over", "hand_over": hand_over})
            if not crashed:
                shutil.rmtree(folder, ignore_errors=True)  # kept otherwise: the failures name its logs

    def _one_worker(self, index, remaining, folder, session, by_id) -> tuple[list, bool]:
        """Run `remaining` in one worker; the items it did not get to, and whether it died."""
        followed = _Followed()
        config = self.config
        try:
            worker = isolation.Worker(
                config.invocation_params.args,
                [i.nodeid for i in remaining],
                cwd=config.invocation_params.dir,
                folder=folder,
                index=index,
            )
        except OSError as exc:
            for item in remaining:
                self._fail(item, followed, f"the isolation worker could not start: {exc}")
            return [], True
        try:
            self._follow(worker, followed, session, by_id)
        except KeyboardInterrupt:
            worker.interrupt()  # it journals what it finished; this process then stops as interrupted
            self._replay_all(worker, followed, by_id)
            raise
        remaining = [i for i in remaining if i.nodeid not in followed.finished]
        why = f"the isolation worker exited with status {worker.returncode}"
        log = f"its log ({worker.log}) ends with:\n{worker.log_tail()}"
        if followed.running is not None:  # it died inside this test; the next worker takes the rest
            item = by_id[followed.running]
            self._fail(item, followed, f"{why} while running this test; {log}")
            return [i for i in remaining if i is not item], True
        if remaining and not followed.started and not (session.shouldfail or session.shouldstop):
            for item in remaining:  # no progress: another worker would do the same
                self._fail(item, followed, f"{why} without running this test; {log}")
            return [], True
        return remaining, False

    def _follow(self, worker, followed, session, by_id) -> None:
        while True:
            exited = worker.returncode is not None
            self._replay_all(worker, followed, by_id)
            if exited:
                return
            if session.shouldfail or session.shouldstop:  # -x / --maxfail counted a worker's failure
                worker.interrupt()
                self._replay_all(worker, followed, by_id)
                return
            time.sleep(POLL_S)

    def _replay_all(self, worker, followed, by_id) -> None:
        followed.queue.extend(worker.events())
        while followed.queue:
            self._replay(followed.queue.popleft(), followed, by_id)

    def _replay(self, event, followed, by_id) -> None:
        kind = event.get("kind")
        if kind == "benchmark":
            persist(self.config).add_recorded(event["row"])
            return
        if kind == "hand_over":  # a later sticky error, in a worker: passed up to the first process
            self.hand_overs.append(event["hand_over"])
            if self.is_worker:
                persist(self.config).journal.write(event)
            return
        if kind not in ("logstart", "report", "logfinish"):
            return  # the worker's header and run record: this process writes its own
        if kind == "report":
            report = self.config.hook.pytest_report_from_serializable(
                config=self.config, data=event["report"]
            )
            _restore_tuples(report)
            nodeid = report.nodeid
        else:
            nodeid = event["nodeid"]
        ihook = by_id[nodeid].ihook if nodeid in by_id else self.config.hook
        if kind == "logstart":
            followed.started.add(nodeid)
            followed.running = nodeid
            ihook.pytest_runtest_logstart(nodeid=nodeid, location=tuple(event["location"]))
        elif kind == "report":
            followed.phases.setdefault(nodeid, set()).add(report.when)
            ihook.pytest_runtest_logreport(report=report)
        else:
            followed.finished.add(nodeid)
            followed.running = None
            ihook.pytest_runtest_logfinish(nodeid=nodeid, location=tuple(event["location"]))

    def _fail(self, item, followed, message: str) -> None:
        """Report `item` failed for a reason outside it (its worker died), through the same hooks
        as a real report, so it is counted, shown and recorded in `outcomes[]`."""
        if item.nodeid not in followed.started:
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        when = "teardown" if "call" in followed.phases.get(item.nodeid, ()) else "call"
        report = pytest.TestReport(
            item.nodeid,
            item.location,
            {k: 1 for k in item.keywords},
            "failed",
            message,
            when,
            user_properties=list(item.user_properties),
        )
        item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        followed.finished.add(item.nodeid)
        followed.running = None

    def _say(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line, yellow=True, bold=True)

    # results -------------------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)  # after the hook that builds `suite`, into the dict it built
    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        if self.hand_overs:
            output_json.setdefault("suite", {})["isolation"] = list(self.hand_overs)

    def pytest_terminal_summary(self, terminalreporter):
        if not self.hand_overs:
            return
        terminalreporter.section("isolation from sticky CUDA errors")
        for h in self.hand_overs:
            terminalreporter.write_line(
                f"after {h['after']}: {h['error']}; {h['tests']} tests ran in "
                f"{h['workers']} fresh worker process(es)"
            )


def _explain(report, error: str, isolated: bool) -> None:
    """Put the device-side assert's own text beside torch's generic message, where the terminal
    summary and `outcomes[]` (the crash message) show it."""
    lines = isolation.kernel_assert_lines(report.capstderr, report.capstdout)
    crash = getattr(report.longrepr, "reprcrash", None)
    if lines and crash is not None:
        crash.message = "\n".join([crash.message, *lines])
    after = (
        "the tests after this one run in a fresh worker process (suite.isolation)"
        if isolated
        else "isolation is off here, so the CUDA tests after this one fail with the same error"
    )
    report.sections.append(
        (
            "sticky CUDA error",
            "\n".join([error, *lines, f"The CUDA context of this process is dead: {after}."]),
        )
    )


def _restore_tuples(report) -> None:
    # JSON has no tuples; pytest and the run's record tell a skip's (path, line, reason) apart
    # from a failure's text by its type.
    report.location = tuple(report.location)
    if isinstance(report.longrepr, list):
        report.longrepr = tuple(report.longrepr)
    report.user_properties = [tuple(p) for p in report.user_properties]
    report.sections = [tuple(s) for s in report.sections]


def _release_device_memory() -> None:
    """Best effort: give back what the dead context still caches. A sticky error usually makes
    the frees fail too, and the memory stays held until this process exits; the worker then
    sees that much less free memory (a limit of running on while the first process waits)."""
    gc.collect()
    if torch.cuda.is_initialized():
        try:
            torch.cuda.empty_cache()
        except RuntimeError:
            pass
