"""Nothing measured is lost when a run is cut short, the pytest glue (suite/persist.py): the
interrupt a cut-short run names in its results."""

from __future__ import annotations

import pytest

from harness.host import signals
from suite import persist


def test_each_way_a_run_is_cut_short_is_named():
    assert persist._describe_interrupt(signals.Terminated()) == "SIGTERM"
    assert persist._describe_interrupt(KeyboardInterrupt()) == "SIGINT (KeyboardInterrupt)"
    assert persist._describe_interrupt(pytest.exit.Exception("out of time")) == "pytest.exit: out of time"
    assert persist._describe_interrupt(pytest.Session.Interrupted("1 error")) == "stopped: 1 error"


def test_a_history_that_cannot_take_the_run_is_one_line_and_never_fails_it(tmp_path, monkeypatch):
    """A locked (or read-only, or full) history turned a green run into exit 1 with a traceback."""
    import sqlite3
    from types import SimpleNamespace

    from reports.history import ingest
    from tests.history_runs import history_doc, write_runs

    (results,) = write_runs(tmp_path / "r", [history_doc(0)])
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, [write_runs(tmp_path / "s", [history_doc(1)])[0]])
    holder = sqlite3.connect(history, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(persist, "HISTORY_WAIT_S", 0.2)
    options = {"--results": str(results), "--no-history": False, "--history": str(history)}
    said = []
    run = SimpleNamespace(
        final_path=results,
        config=SimpleNamespace(getoption=lambda name, default=None: options.get(name, default)),
        _say=said.append,
    )
    try:
        persist.Persist.append_to_history(run)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(said) == 1 and said[0].startswith(f"history: not appended to {history} (locked by another")
    assert f"python -m reports history add {results}" in said[0]
