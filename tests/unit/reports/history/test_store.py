"""The history (reports.history): every run kept once, a damaged or foreign file refused and left
as it was, the schema migrated, change points found at the right run, the gate's baseline drawn from
it, the report's History section."""

from __future__ import annotations

import sqlite3

import pytest

from reports import load
from reports.__main__ import main
from reports.gate import cli
from reports.history import changes, ingest, store
from tests.history_runs import history_doc as _doc
from tests.history_runs import write_runs as _write


def test_the_store_keeps_the_rows_it_is_given_once_per_identity(tmp_path):
    rows = store.RunRows(
        run={"machine": "m", "commit_id": "c"},
        speedups=[
            ("a.b", "n1", "float32", "cpu", 1.0, "f", "s", 0.5, None, 5, 0.01, "", 1, b"\0" * 8)
            + (1.6, 1.5, 1.7, "rule")
        ],
        points=[("a.b", "n1", "float32", "cpu", "f", 5, 1e-3, 1e-4, None)],
        verdicts=[("a.b", "", "holds", "because")],
    )
    with store.connect(tmp_path / "h.sqlite") as db:
        first = store.insert(db, "id1", {"benchmarks": []}, rows)
        again = store.insert(db, "id1", {"benchmarks": []}, rows)
        assert first == (1, True) and again == (1, False) and store.run_id(db, "id1") == 1
        assert store.speedups(db)[["case_id", "log", "speedup", "against"]].values.tolist() == [
            ["a.b", 0.5, 1.6, "rule"]
        ]
        assert db.execute("SELECT variant, median_s FROM points").fetchall() == [("f", 1e-3)]
        assert store.verdicts(db)["verdict"].tolist() == ["holds"]
        assert store.document(db, 1) == {"benchmarks": []}


def test_a_truncated_history_is_refused_and_left_unchanged(tmp_path):
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "r", [_doc(0), _doc(1)]))
    data = history.read_bytes()
    history.write_bytes(data[: len(data) // 2])
    cut = history.read_bytes()
    with pytest.raises(store.HistoryError, match="h.sqlite: .*left unchanged"):
        ingest.add_files(history, _write(tmp_path / "s", [_doc(2)]))
    assert history.read_bytes() == cut
    assert main(["history", "changes", "--history", str(history)]) == 2
    assert history.read_bytes() == cut


@pytest.mark.parametrize("what", ["empty", "text", "foreign"])
def test_a_foreign_file_is_refused_in_one_line_never_overwritten(tmp_path, what, capsys):
    history = tmp_path / "h.sqlite"
    if what == "empty":
        history.write_bytes(b"")
    elif what == "text":
        history.write_text("not a database\n")
    else:
        db = sqlite3.connect(history)
        db.execute("CREATE TABLE other (x)")
        db.commit()
        db.close()
    before = history.read_bytes()
    (path,) = _write(tmp_path / "r", [_doc(0)])
    assert main(["history", "add", str(path), "--history", str(history)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(history) in err
    assert history.read_bytes() == before


def test_a_version_1_history_is_migrated_in_place(tmp_path):
    history = tmp_path / "h.sqlite"
    db = sqlite3.connect(history)
    for statement in store.SCHEMA_V1.strip().split(";\n"):
        db.execute(statement)
    db.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO runs (identity, machine) VALUES ('x', 'Box (2 cores), AVX2 · torch 2.12.0+cpu')")
    db.commit()
    db.close()
    with store.connect(history) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
        runs = store.runs(db)
    assert list(runs["hardware"]) == ["Box (2 cores), AVX2"] and list(runs["branch"]) == [""]
    ingest.add_files(history, _write(tmp_path / "r", [_doc(0)]))  # and it takes new runs
    with store.connect(history) as db:
        assert len(store.runs(db)) == 2


def test_a_newer_schema_is_refused(tmp_path):
    history = tmp_path / "h.sqlite"
    with store.connect(history) as db:
        db.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    with pytest.raises(store.HistoryError, match="newer than this code"):
        changes.changes(history)


def test_the_gate_draws_its_baseline_from_the_history(tmp_path):
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "base", [_doc(i) for i in range(7)]))
    current = _write(tmp_path / "cur", [_doc(10)])[0]
    code, text = cli.run(None, current, history=history, last=5)
    assert code == 0, text
    slower = _write(tmp_path / "slow", [_doc(11, step_at=0, step=0.5)])[0]
    code, text = cli.run(None, slower, history=history)
    assert code == 1 and "regressed" in text
    # the current run in the history is never its own baseline; another branch is not the baseline
    ingest.add_files(history, [slower])
    assert cli.run(None, slower, history=history)[0] == 1
    assert (
        main(["gate", "--history", str(history), "--current", str(current), "--baseline-branch", "dev"]) == 2
    )


def test_a_history_baseline_judges_exactly_as_a_folder_of_the_same_runs(tmp_path):
    docs = [_doc(i, sizes=(128, 256)) for i in range(5)]
    folder = tmp_path / "base"
    _write(folder, docs)
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, [folder])
    current = _write(tmp_path / "cur", [_doc(9, step_at=0, step=0.15, sizes=(128, 256))])[0]
    from_folder = cli.run(folder, current)
    from_history = cli.run(None, current, history=history)
    assert from_folder == from_history


def test_the_history_baseline_is_the_last_runs_of_the_machine_and_branch(tmp_path):
    docs = [_doc(i) for i in range(8)]
    docs[6]["commit_info"]["branch"] = "feature"
    docs[7]["commit_info"]["dirty"] = True
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, _write(tmp_path / "r", docs))
    current = load.load([_write(tmp_path / "c", [_doc(20)])[0]])
    _, names = store.baseline_results(history, current, last=3)
    assert [n.split("-")[2].removesuffix(".json") for n in names] == [f"{i:040x}"[:10] for i in (3, 4, 5)]


def _adder(args) -> None:  # one process's share of the concurrent appends
    history, paths = args
    ingest.add_files(history, paths)


def test_a_locked_history_waits_a_bounded_time_in_python_and_says_so(tmp_path, capsys):
    """Another writer holding the history: the wait ends at its bound with "locked" (SQLite's own
    busy wait sat in C for 120 s, deaf to Ctrl-C), and `history add` exits 2 naming it, never 4."""
    import time

    (path,) = _write(tmp_path / "r", [_doc(0)])
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, [path])
    holder = sqlite3.connect(history, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        (other,) = _write(tmp_path / "s", [_doc(1)])
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked") as raised:
            ingest.add_files(history, [other], wait_s=0.3)
        assert time.monotonic() - started < 5
        assert store.describe_error(raised.value).startswith("locked by another writer")
        original = store.BUSY_TIMEOUT_MS
        store.BUSY_TIMEOUT_MS = 300
        try:
            code = main(["history", "add", str(other), "--history", str(history)])
        finally:
            store.BUSY_TIMEOUT_MS = original
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 2  # locked at its bound: bad input of the machine's, never 4 ("a bug")
    assert "internal error" not in capsys.readouterr().err


def test_a_failed_transaction_that_sqlite_rolled_back_keeps_its_cause(tmp_path):
    """After SQLITE_FULL SQLite has rolled back already: a second ROLLBACK raised "no transaction
    is active" and hid "database or disk is full"."""
    db = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        with store.transaction(db):
            db.execute("ROLLBACK")  # as SQLite does on a full disk
            raise sqlite3.OperationalError("database or disk is full")
    assert store.describe_error(sqlite3.OperationalError("database or disk is full")) == "the disk is full"
    assert store.describe_error(sqlite3.OperationalError("attempt to write a readonly database")).startswith(
        "read-only"
    )
