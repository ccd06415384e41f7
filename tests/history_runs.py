"""Synthetic runs of a history for the history's tests (reports/history): run i has its own commit
and date, and from a chosen run on a planted step in the fast variant's speed-up."""

from __future__ import annotations

import json
from pathlib import Path

from tests import synthetic

SMALL = dict(sizes=(128,), variants=synthetic.VARIANTS[:2], n_rounds=8, paired=True)


def history_doc(
    i: int, *, step_at: int | None = None, step: float = 0.0, torch: str | None = None, **kw
) -> dict:
    """Run i of a history: its own commit and time; from run ``step_at`` on, the fast variant
    1/(1−step) slower (its speed-up down by ``step``)."""
    slow = {"fast_v": 1 / (1 - step)} if step_at is not None and i >= step_at else None
    machine = dict(synthetic.MACHINE, torch_version=torch) if torch else None
    doc = synthetic.result(seed=i, slow=slow, machine=machine, **{**SMALL, **kw})
    doc["commit_info"] = {"id": f"{i:040x}", "branch": "main", "dirty": False}
    doc["datetime"] = f"2026-02-{i + 1:02d}T00:00:00"
    return doc


def write_runs(folder: Path, docs) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, doc in enumerate(docs):
        paths.append(folder / f"run{i:03d}.json")
        paths[-1].write_text(json.dumps(doc))
    return paths
