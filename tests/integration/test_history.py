"""The history in real processes (reports.history.store): two processes appending 100 runs lose none, and a
run with --results appends to the history beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reports.history import store
from tests import synthetic
from tests.launcher import ROOT

SMALL = dict(sizes=(128,), variants=synthetic.VARIANTS[:2], n_rounds=8, paired=True)


def _doc(i: int, *, step_at: int | None = None, step: float = 0.0, torch: str | None = None, **kw) -> dict:
    """Run i of a history: its own commit and time; from run ``step_at`` on, the fast variant
    1/(1−step) slower (its speed-up down by ``step``)."""
    slow = {"fast_v": 1 / (1 - step)} if step_at is not None and i >= step_at else None
    machine = dict(synthetic.MACHINE, torch_version=torch) if torch else None
    doc = synthetic.result(seed=i, slow=slow, machine=machine, **{**SMALL, **kw})
    doc["commit_info"] = {"id": f"{i:040x}", "branch": "main", "dirty": False}
    doc["datetime"] = f"2026-02-{i + 1:02d}T00:00:00"
    return doc


def _write(folder: Path, docs) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, doc in enumerate(docs):
        paths.append(folder / f"run{i:03d}.json")
        paths[-1].write_text(json.dumps(doc))
    return paths


@pytest.mark.integration
def test_two_processes_appending_100_runs_lose_none(tmp_path):
    paths = _write(tmp_path / "r", [_doc(i, n_rounds=5) for i in range(100)])
    history = tmp_path / "h.sqlite"
    code = "import sys; from reports.history import store; store.add_files(sys.argv[1], sys.argv[2:])"
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
