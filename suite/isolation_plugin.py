"""A sticky CUDA error fails its own test only: the pytest glue of `harness.isolation`, which says
why this mechanism and runs the workers.

In every process, CUDA is synchronized after each test's call (an asynchronous error fails the test
that launched the kernel) and the context is probed after each failed phase; the failure gets the
kernel's own assert text into its message. From the next test on, the remaining node IDs go to a
worker, whose events are replayed here as this process's own reports (terminal, exit status, junit
XML, `outcomes[]`) and whose finished points join this session's JSON
(`suite.persist.Persist.add_recorded`); ``suite.isolation`` in the JSON lists each hand-over. A
worker runs only the node IDs it was given and journals every test event for its parent.

``--no-isolation`` keeps every test in the first process (later CUDA tests then fail with the same
error); so does ``--pdb`` (a worker has no terminal to debug in) and a pytest-xdist worker (its
arguments are the controller's, and pytest-benchmark is off under xdist anyway).
"""

from __future__ import annotations

import os

import pytest

from harness import isolation
from suite.persist import persist

ISOLATION = pytest.StashKey["Isolation"]()


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


class Isolation:
    def __init__(self, config):
        self.config = config
        self.context = isolation.Context.from_environ()
        self.worker_nodeids = isolation.worker_nodeids()
        self.enabled = not (
            config.getoption("--no-isolation")
            or config.getoption("usepdb")
            or os.environ.get("PYTEST_XDIST_WORKER")
        )
        self.dead: tuple[str, str] | None = None  # (node ID, error) once the context is dead
        self.handed_over: set[str] = set()
        self.hand_overs: list[dict] = []
        self._by_id: dict = {}  # node ID → item, of the tests handed over to workers
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
        self._journal({"kind": "logstart", "nodeid": nodeid, "location": location})

    def pytest_runtest_logreport(self, report):
        if self.is_worker:
            data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
            self._journal({"kind": "report", "report": data})

    def pytest_runtest_logfinish(self, nodeid, location):
        self._journal({"kind": "logfinish", "nodeid": nodeid, "location": location})

    def _journal(self, event: dict) -> None:  # a worker's events, for the process that started it
        if self.is_worker:
            persist(self.config).journal.write(event)

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

    # workers ---------------------------------------------------------------------------------------
    def _run_in_workers(self, session, rest) -> None:
        nodeid, error = self.dead
        record = isolation.hand_over(nodeid, error, len(rest))
        self._say(
            f"sticky CUDA error in {nodeid} ({record['error']}): the {len(rest)} tests after it run "
            f"in a fresh worker process"
        )
        isolation.release_device_memory()
        self._by_id = {item.nodeid: item for item in rest}
        self.hand_overs.append(record)  # before the workers' own, which arrive while they run
        try:
            isolation.run_in_workers(
                self.config.invocation_params.args,
                [item.nodeid for item in rest],
                cwd=self.config.invocation_params.dir,
                record=record,
                replay=self._replay,
                fail=self._fail,
                stopped=lambda: bool(session.shouldfail or session.shouldstop),
            )
        finally:
            self._journal({"kind": "hand_over", "hand_over": record})

    def _replay(self, event) -> None:
        """One event of a worker taken in as this process's own."""
        kind = event.get("kind")
        if kind == "benchmark":
            persist(self.config).add_recorded(event["row"])
        elif kind == "hand_over":  # a later sticky error, in a worker: passed up to the first process
            self.hand_overs.append(event["hand_over"])
            self._journal(event)
        elif kind == "report":
            report = self.config.hook.pytest_report_from_serializable(
                config=self.config, data=event["report"]
            )
            _restore_tuples(report)
            self._ihook(report.nodeid).pytest_runtest_logreport(report=report)
        elif kind in (
            "logstart",
            "logfinish",
        ):  # else the worker's header and run record: this process writes its own
            hook = getattr(self._ihook(event["nodeid"]), f"pytest_runtest_{kind}")
            hook(nodeid=event["nodeid"], location=tuple(event["location"]))

    def _ihook(self, nodeid):
        return self._by_id[nodeid].ihook if nodeid in self._by_id else self.config.hook

    def _fail(self, nodeid: str, message: str, started: bool, when: str) -> None:
        """Report a test failed for a reason outside it (its worker died), through the same hooks
        as a real report, so it is counted, shown and recorded in `outcomes[]`."""
        item = self._by_id[nodeid]
        if not started:
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        keywords = {k: 1 for k in item.keywords}
        report = pytest.TestReport(
            item.nodeid,
            item.location,
            keywords,
            "failed",
            message,
            when,
            user_properties=list(item.user_properties),
        )
        item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

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
            terminalreporter.write_line(isolation.hand_over_line(h))


def _explain(report, error: str, isolated: bool) -> None:
    """Put the device-side assert's own text beside torch's generic message, where the terminal
    summary and `outcomes[]` (the crash message) show it."""
    lines = isolation.kernel_assert_lines(report.capstderr, report.capstdout)
    crash = getattr(report.longrepr, "reprcrash", None)
    if lines and crash is not None:
        crash.message = "\n".join([crash.message, *lines])
    report.sections.append(("sticky CUDA error", isolation.dead_context_note(error, lines, isolated)))


def _restore_tuples(report) -> None:
    # JSON has no tuples; pytest and the run's record tell a skip's (path, line, reason) apart
    # from a failure's text by its type.
    report.location = tuple(report.location)
    if isinstance(report.longrepr, list):
        report.longrepr = tuple(report.longrepr)
    report.user_properties = [tuple(p) for p in report.user_properties]
    report.sections = [tuple(s) for s in report.sections]
