"""The history in real processes (reports.history.store): two processes appending 100 runs lose none, and a
run with --results appends to the history beside it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reports.history import store
from tests.history_runs import history_doc as _doc
from tests.history_runs import write_runs as _write
from tests.launcher import ROOT


@pytest.mark.integration
def test_two_processes_appending_100_runs_lose_none(tmp_path):
    paths = _write(tmp_path / "r", [_doc(i, n_rounds=5) for i in range(100)])
    history = tmp_path / "h.sqlite"
    code = "import sys; from reports.history import ingest; ingest.add_files(sys.argv[1], sys.argv[2:])"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(history), *map(str, half)], cwd=ROOT)
        for half in (paths[0::2], paths[1::2])
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    with store.connect(history) as db:
        runs = store.runs(db)
        assert db.execute("SELECT COUNT(DISTINCT run_id) FROM speedups").fetchone()[0] == 100
    assert len(runs) == 100 and runs["identity"].is_unique


@pytest.mark.integration
def test_a_run_with_results_appends_to_the_history_beside_it(tmp_path):
    checks = ["suite", "--device", "cpu", "-k", "shape.ops and test_rule", "--benchmark-only", "-q"]
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *checks]
    done = subprocess.run(
        [*run, f"--results={tmp_path / 'a.json'}"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert f"appended to {tmp_path / 'history.sqlite'}" in done.stdout
    with store.connect(tmp_path / "history.sqlite", create=False) as db:
        (source,) = store.runs(db)["source"]
        assert {v for v in store.verdicts(db)["case_id"]} == {"shape.ops"}
    assert source == str(tmp_path / "a.json")
    done = subprocess.run(
        [*run, f"--results={tmp_path / 'b' / 'b.json'}", "--no-history"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and not (tmp_path / "b" / "history.sqlite").exists()
