"""A pytest report as isolation leaves it: the failure that killed the CUDA context explained in
its report, and a worker process's events (reports, finished points, hand-overs) taken in as this
process's own. The pytest-shaped half of isolation; harness.run.isolation is the plain half (the
probe, the workers, the hand-over)."""

from __future__ import annotations

from harness.run.isolation import dead_context_note, kernel_assert_lines


def explain(report, error: str, isolated: bool) -> None:
    """Put the device-side assert's own text beside torch's generic message in a failed test's
    report (a pytest ``TestReport``), where the terminal summary and `outcomes[]` (the crash
    message) show it."""
    lines = kernel_assert_lines(report.capstderr, report.capstdout)
    crash = getattr(report.longrepr, "reprcrash", None)
    if lines and crash is not None:
        crash.message = "\n".join([crash.message, *lines])
    report.sections.append(("sticky CUDA error", dead_context_note(error, lines, isolated)))


def restore_tuples(report) -> None:
    """A report read back from a worker's journal, with the tuples it had before JSON."""
    # JSON has no tuples; pytest and the run's record tell a skip's (path, line, reason) apart
    # from a failure's text by its type.
    report.location = tuple(report.location)
    if isinstance(report.longrepr, list):
        report.longrepr = tuple(report.longrepr)
    report.user_properties = [tuple(p) for p in report.user_properties]
    report.sections = [tuple(s) for s in report.sections]


def replay_event(event: dict, *, point, hand_over, deserialize, hook) -> None:
    """One event of a worker, taken in as this process's own: `point(row)` a finished benchmark
    point; `hand_over(record)` a later sticky error, in a worker; `hook(nodeid, name, kwargs)` a
    test's event, for its pytest hook ``pytest_runtest_<name>`` (``logstart``, ``logreport``,
    ``logfinish``) called with `kwargs`, a report made by `deserialize(data)` from what the worker
    serialized."""
    kind = event.get("kind")
    if kind == "benchmark":
        point(event["row"])
    elif kind == "hand_over":
        hand_over(event["hand_over"])
    elif kind == "report":
        report = deserialize(event["report"])
        restore_tuples(report)
        hook(report.nodeid, "logreport", {"report": report})
    elif kind in ("logstart", "logfinish"):
        nodeid = event["nodeid"]
        hook(nodeid, kind, {"nodeid": nodeid, "location": tuple(event["location"])})
    # else the worker's header and run record: this process writes its own
