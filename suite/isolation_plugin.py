"""A sticky CUDA error fails its own test only: the pytest glue of `harness.run.isolation`, which says
why this mechanism and how it works, runs the workers and keeps this process's state (`State`).
The hooks here synchronize CUDA after each test's call, probe the context after each failed phase,
and replay a worker's events as this process's own reports (terminal, exit status, junit XML,
`outcomes[]`), its finished points into this session's JSON (`suite.persist.Persist.add_recorded`).
"""

from __future__ import annotations

import pytest

from harness.run import isolation
from suite import worker_reports
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
        self.worker_nodeids = isolation.worker_nodeids()
        self.is_worker = self.worker_nodeids is not None
        enabled = isolation.enabled(config.getoption("--no-isolation"), config.getoption("usepdb"))
        self.state = isolation.State(isolation.Context.from_environ(), enabled, self._journal)
        self._by_id: dict = {}  # node ID → item, of the tests handed over to workers
        if self.is_worker:
            isolation.watch_parent()

    # a worker runs the node IDs it was given, in the first process's order ----------------------
    @pytest.hookimpl(trylast=True)  # after -k/-m and every other selection
    def pytest_collection_modifyitems(self, config, items):
        if self.is_worker:
            kept, dropped = isolation.partition(items, self.worker_nodeids)
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
        self.state.context.before_call(item.nodeid)
        result = yield
        self.state.context.after_call()
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and (error := self.state.failed(item.nodeid)) is not None:
            worker_reports.explain(report, error, self.state.enabled)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if item.nodeid in self.state.handed_over:
            return True  # its reports came from a worker
        if not self.state.handing_over:
            return None
        items = item.session.items
        rest = items[items.index(item) :]
        self._by_id = {i.nodeid: i for i in rest}
        self.state.hand_over_rest(
            self.config.invocation_params.args,
            [i.nodeid for i in rest],
            cwd=self.config.invocation_params.dir,
            say=self._say,
            replay=self._replay,
            fail=self._fail,
            stopped=lambda: bool(item.session.shouldfail or item.session.shouldstop),
        )
        return True

    # a worker's events, as this process's own ----------------------------------------------------
    def _replay(self, event) -> None:
        worker_reports.replay_event(
            event,
            point=lambda row: persist(self.config).add_recorded(row),
            hand_over=self.state.passed_up,
            deserialize=lambda data: self.config.hook.pytest_report_from_serializable(
                config=self.config, data=data
            ),
            hook=self._hook,
        )

    def _hook(self, nodeid: str, name: str, kwargs: dict) -> None:
        ihook = self._by_id[nodeid].ihook if nodeid in self._by_id else self.config.hook
        getattr(ihook, f"pytest_runtest_{name}")(**kwargs)

    def _fail(self, nodeid: str, message: str, started: bool, when: str) -> None:
        """Report a test failed for a reason outside it (its worker died), through the same hooks
        as a real report, so it is counted, shown and recorded in `outcomes[]`."""
        item = self._by_id[nodeid]
        if not started:
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        report = pytest.TestReport(
            item.nodeid,
            item.location,
            dict.fromkeys(item.keywords, 1),
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
        if self.state.hand_overs:
            output_json.setdefault("suite", {})["isolation"] = list(self.state.hand_overs)

    def pytest_terminal_summary(self, terminalreporter):
        if self.state.hand_overs:
            terminalreporter.section("isolation from sticky CUDA errors")
            for h in self.state.hand_overs:
                terminalreporter.write_line(isolation.hand_over_line(h))
