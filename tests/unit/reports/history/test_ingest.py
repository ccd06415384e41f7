"""A results file into the history (reports.history.ingest): each run kept once by its content,
with the rows the gate and the report read derived from it."""

from __future__ import annotations

import gzip

from reports import load
from reports.history import ingest, store
from tests import synthetic
from tests.history_runs import history_doc as _doc
from tests.history_runs import write_runs as _write


def test_a_run_added_twice_is_kept_once_by_its_content(tmp_path):
    (path,) = _write(tmp_path / "r", [_doc(0)])
    copy = tmp_path / "copy.json.gz"  # a shipped reference run's form
    copy.write_bytes(gzip.compress(path.read_bytes()))
    history = tmp_path / "h.sqlite"
    first = ingest.add_files(history, [path])
    again = ingest.add_files(history, [copy, path])
    assert first[0].new and not any(a.new for a in again)
    with store.connect(history) as db:
        runs = store.runs(db)
    assert len(runs) == 1
    # the same identity reports.load counts duplicates by
    assert load.load([path, copy]).duplicates and runs["identity"][0] == store.identity(load.read_json(path))


def test_a_run_keeps_what_the_gate_and_the_report_need(tmp_path):
    paths = _write(tmp_path / "r", [_doc(0)])
    history = tmp_path / "h.sqlite"
    ingest.add_files(history, paths)
    with store.connect(history) as db:
        run = store.runs(db).iloc[0]
        sp = store.speedups(db)
        ratios = db.execute("SELECT ratios FROM speedups WHERE paired = 1").fetchone()[0]
        points = db.execute("SELECT median_s, iqr_s FROM points").fetchall()
        verdicts = store.verdicts(db)
        doc = store.document(db, int(run["id"]))
    assert run["machine"] == load.machine_key(synthetic.MACHINE) and run["commit_id"] == f"{0:040x}"
    assert run["branch"] == "main" and run["dirty"] == 0 and run["torch"] == "2.13.0+cpu"
    assert sp["paired"].all() and (sp["ci_low"] < sp["speedup"]).all() and len(ratios) == 8 * 8
    assert points and all(m > 0 for m, _ in points)
    assert set(verdicts["case_id"]) == {"distance.pairwise"}
    assert doc == load.read_json(paths[0])
