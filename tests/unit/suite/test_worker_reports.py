"""suite.worker_reports: the report of the failure that killed the CUDA context, and a worker's
events taken in as this process's own, without a run (the real pytest runs in a subprocess are in
tests/integration/test_isolation.py)."""

from types import SimpleNamespace

from harness.run import isolation
from suite import worker_reports

STICKY = "CUDA error: device-side assert triggered"


def _failed_report(stderr=""):
    crash = SimpleNamespace(message="RuntimeError: CUDA error: device-side assert triggered")
    return SimpleNamespace(
        capstderr=stderr, capstdout="", longrepr=SimpleNamespace(reprcrash=crash), sections=[]
    )


def test_the_failure_that_killed_the_context_carries_the_kernel_assert_and_what_happens_next():
    report = _failed_report(f"noise\n{isolation.SIMULATED_KERNEL_LINE}\n")
    worker_reports.explain(report, STICKY, isolated=True)
    assert report.longrepr.reprcrash.message.endswith("\n" + isolation.SIMULATED_KERNEL_LINE)
    [(title, note)] = report.sections
    assert title == "sticky CUDA error"
    assert note.startswith(STICKY) and "fresh worker process" in note
    off = _failed_report()
    worker_reports.explain(off, STICKY, isolated=False)
    assert off.longrepr.reprcrash.message == _failed_report().longrepr.reprcrash.message
    assert "isolation is off" in off.sections[0][1]


def _replayed(event):
    calls = []
    worker_reports.replay_event(
        event,
        point=lambda row: calls.append(("point", row)),
        hand_over=lambda record: calls.append(("hand_over", record)),
        deserialize=lambda data: SimpleNamespace(**data),
        hook=lambda nodeid, name, kwargs: calls.append((nodeid, name, kwargs)),
    )
    return calls


def test_each_worker_event_goes_to_its_own_place_and_its_header_nowhere():
    assert _replayed({"kind": "benchmark", "row": {"id": 1}}) == [("point", {"id": 1})]
    record = isolation.hand_over("t::a", STICKY, 3)
    assert _replayed(isolation.hand_over_event(record)) == [("hand_over", record)]
    start = {"kind": "logstart", "nodeid": "t::a", "location": ["t.py", 1, "a"]}
    assert _replayed(start) == [("t::a", "logstart", {"nodeid": "t::a", "location": ("t.py", 1, "a")})]
    finish = {**start, "kind": "logfinish"}
    assert _replayed(finish) == [("t::a", "logfinish", {"nodeid": "t::a", "location": ("t.py", 1, "a")})]
    assert _replayed({"kind": "header"}) == []


def test_a_replayed_report_has_its_tuples_back():
    """A skip's longrepr is (path, line, reason); JSON made it a list, which reads as a failure's text."""
    data = {
        "nodeid": "t::a",
        "location": ["t.py", 1, "a"],
        "longrepr": ["t.py", 3, "Skipped: no CUDA"],
        "user_properties": [["k", "v"]],
        "sections": [["Captured stdout call", "x"]],
    }
    [(nodeid, name, kwargs)] = _replayed({"kind": "report", "report": data})
    report = kwargs["report"]
    assert (nodeid, name) == ("t::a", "logreport")
    assert report.location == ("t.py", 1, "a")
    assert report.longrepr == ("t.py", 3, "Skipped: no CUDA")
    assert report.user_properties == [("k", "v")]
    assert report.sections == [("Captured stdout call", "x")]
    failure = _replayed({"kind": "report", "report": {**data, "longrepr": "AssertionError"}})
    assert failure[0][2]["report"].longrepr == "AssertionError"
