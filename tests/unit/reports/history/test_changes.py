"""Change points and verdict changes in the history (reports/history/changes.py): none in unchanged runs,
the torch upgrade named, verdict changes listed with commit and torch, --since a commit or a date."""

from __future__ import annotations

import pytest

from reports.__main__ import main
from reports.history import changes, ingest, store
from tests.history_runs import history_doc as _doc
from tests.history_runs import write_runs as _write


def test_unchanged_runs_have_no_change_point(tmp_path):
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "r", [_doc(i, sizes=(128, 256)) for i in range(10)]))
    assert [c for c in changes.changes(history) if c.kind == "speed-up"] == []


def test_changes_by_torch_name_the_upgrade(tmp_path, capsys):
    docs = [_doc(i, step_at=4, step=0.3, torch="2.12.0+cpu" if i < 4 else "2.13.0+cpu") for i in range(8)]
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "r", docs))
    # per machine key (torch included) each torch has its own series: nothing changed within either
    assert [c for c in changes.changes(history) if c.kind == "speed-up"] == []
    by_torch = [c for c in changes.changes(history, by="torch") if c.kind == "speed-up"]
    assert by_torch and all(c.previous_torch == "2.12.0+cpu" and c.torch == "2.13.0+cpu" for c in by_torch)
    assert main(["history", "changes", "--by", "torch", "--history", str(history)]) == 0
    assert "2.12.0+cpu → 2.13.0+cpu" in capsys.readouterr().out


def test_verdict_changes_are_listed_with_commit_and_torch(tmp_path):
    docs = [_doc(i) for i in range(4)]
    bad = {
        "case": "distance.pairwise",
        "kind": "check",
        "name": "wrong",
        "outcome": "failed",
        "reason": "boom",
    }
    docs[2]["outcomes"].append({**bad, "nodeid": "x::test_check[wrong]"})
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "r", docs))
    found = [c for c in changes.changes(history) if c.kind == "verdict" and c.pair == ""]
    assert [(c.commit, c.torch) for c in found] == [(f"{2:040x}", "2.13.0+cpu"), (f"{3:040x}", "2.13.0+cpu")]
    assert found[0].before == "holds" and found[0].after != "holds" and found[1].after == "holds"


def test_changes_since_a_commit_or_a_date(tmp_path, capsys):
    docs = [_doc(i, step_at=5, step=0.2) for i in range(8)]
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "r", docs))
    speed = lambda found: [c for c in found if c.kind == "speed-up"]  # noqa: E731
    assert speed(changes.changes(history, since=f"{5:040x}")) and speed(
        changes.changes(history, since=f"{4:040x}")
    )
    assert not speed(changes.changes(history, since=f"{6:040x}"))
    with pytest.raises(store.HistoryError, match="names 8 commits"):
        changes.changes(history, since="0000000")
    assert not speed(changes.changes(history, since="2026-02-07"))
    assert main(["history", "runs", "--history", str(history)]) == 0
    assert capsys.readouterr().out.count(" main ") == 8  # what the example workflow counts
