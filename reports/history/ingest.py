"""A results file into the history: the rows the history keeps of a run beside its file, derived
through the judging stages, then kept by `reports.history.store`.

The store keeps and reads; deriving a run's rows needs the gate's reading of a run, the summary and
the verdicts, so it sits here, above both (the store importing the gate made a circle: the gate's
command reads its baseline from the store). Per run:

* ``speedups`` — per pair and size, as the gate reads a run (`reports.gate.Runs`: the median of the
  paired rounds' log ratios, else of the medians; its within-run variance, rounds, spread, busy) and
  as the report does (`reports.summary`: the speed-up and its 95% interval), with the paired rounds'
  log ratios themselves;
* ``points`` — per variant point: median and IQR of its rounds, peak memory;
* ``verdicts`` — per ID the technique's verdict, per claim its verdict (`reports.verdicts`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.contract.record import KEY_COLUMNS
from reports import gate, load, summary, verdicts
from reports.history import store


def _float(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


@dataclass
class Added:
    path: str
    run_id: int
    new: bool  # False: the same run was in the history already


def run_row(doc: dict, results: load.Results, path: Path) -> dict:
    """The ``runs`` row: what tells this run apart from the others (commit, machine, versions, load)."""
    run = results.runs.iloc[0]
    torch_info = run["machine_info"] if isinstance(run["machine_info"], dict) else {}
    commit = doc.get("commit_info") or {}
    gpu = torch_info.get("gpu") if isinstance(torch_info.get("gpu"), dict) else {}
    cpu = torch_info.get("cpu_detail") if isinstance(torch_info.get("cpu_detail"), dict) else {}
    floors = torch_info.get("noise_floor") if isinstance(torch_info.get("noise_floor"), dict) else {}
    probe = {dev: f.get("load") for dev, f in floors.items() if isinstance(f, dict) and f.get("load")}
    threads = cpu.get("torch_threads") or torch_info.get("threads")
    dirty = commit.get("dirty")
    return dict(
        machine=str(run["machine"]),
        hardware=str(run["machine"]).split(" · ")[0],
        torch=str(run["torch_version"] or ""),
        cuda=str(run["cuda_version"] or ""),
        driver=str(gpu.get("driver") or torch_info.get("driver_version") or ""),
        commit_id=str(commit.get("id") or ""),
        branch=str(commit.get("branch") or ""),
        dirty=None if dirty is None else int(bool(dirty)),
        time=str(doc.get("datetime") or ""),
        profile=str(run["profile"] or ""),
        threads=int(threads) if isinstance(threads, (int, float)) and not isinstance(threads, bool) else None,
        load=json.dumps(probe, sort_keys=True, default=str) if probe else "",
        partial=int(bool(run["partial"])),
        source=str(path),
    )


def speedup_rows(results: load.Results, table: pd.DataFrame) -> list[tuple]:
    """The ``speedups`` rows: each gated pair of each run as the gate reads it, with the report's interval."""
    runs = gate.Runs(results)
    known = results.cases_of()
    interval = {
        (*(getattr(r, c) for c in KEY_COLUMNS), r.fast, r.slow): (r.speedup, r.ci_low, r.ci_high, r.against)
        for r in table.itertuples()
        if getattr(r, "timing_mode", "warm") == "warm"
    }
    out = []
    for key, group in gate.groups_by_key(results).items():
        for fast, slow in gate.gated_pairs(group, known):
            paired = runs.paired.get((*key, fast, slow), {})
            for r in runs.of(key, fast, slow):
                logs = paired.get(r.run)
                ratios = np.concatenate(logs[0]).astype("<f8").tobytes() if logs else None
                sp, lo, hi, against = interval.get((*key, fast, slow), (None, None, None, ""))
                out.append(
                    (
                        *key,
                        _float(group.key.get("x")),
                        fast,
                        slow,
                        r.log,
                        _float(r.var),
                        r.rounds,
                        _float(r.spread),
                        r.busy or "",
                        int(r.paired),
                        ratios,
                        _float(sp),
                        _float(lo),
                        _float(hi),
                        str(against or ""),
                    )
                )
    return out


def point_rows(rows: pd.DataFrame) -> list[tuple]:
    """The ``points`` rows: each variant point's median, IQR and peak memory."""
    return list(
        zip(
            *(rows[c] for c in KEY_COLUMNS),
            rows["variant"],
            rows["rounds"].astype(int).tolist(),
            map(_float, rows["median_s"]),
            map(_float, rows["iqr_s"]),
            map(_float, rows["peak_bytes"]),
        )
    )


def verdict_rows(results: load.Results, table: pd.DataFrame) -> list[tuple]:
    """The ``verdicts`` rows: per ID its technique verdict (claim ''), then each claim's."""
    judged = verdicts.judge_all(results, table, verdicts.catalogue_of(results))
    out = []
    for (_, case_id), j in judged.items():
        out.append((case_id, "", j.verdict, j.evidence[:500]))
        out.extend((case_id, c.claim.id, c.verdict, c.evidence[:500]) for c in j.claims)
    return out


def run_rows(doc: dict, results: load.Results, path: Path) -> store.RunRows:
    """Everything the history keeps of one run beside its file."""
    table = summary.build(results.rows, results.cases, results.pairs)
    return store.RunRows(
        run=run_row(doc, results, path),
        speedups=speedup_rows(results, table),
        points=point_rows(results.rows),
        verdicts=verdict_rows(results, table),
    )


def add(db: sqlite3.Connection, path, wait_s: float | None = None) -> Added:
    """Append one results file (``.json`` or ``.json.gz``, read by `reports.load`); a run already
    in the history (same content hash) is not added again."""
    path = Path(path)
    doc = load.read_json(path)
    ident = store.identity(doc)
    known = store.run_id(db, ident)
    if known is not None:
        return Added(str(path), known, False)
    results = load.load([path])
    if len(results.runs) != 1:
        raise store.HistoryError(f"{path}: holds {len(results.runs)} runs; add one results file at a time")
    # Everything is computed before the transaction: a writer holds the lock for the inserts only.
    rows = run_rows(doc, results, path)
    run_id, new = store.insert(db, ident, doc, rows, wait_s)
    return Added(str(path), run_id, new)


def add_files(history, paths, wait_s: float | None = None) -> list[Added]:
    """Each results file added in a transaction of its own; `wait_s`: how long to wait for
    another writer (a run appending itself waits less than `history add` does)."""
    files = load.collect_paths(paths)
    with store.connect(history) as db:
        return [add(db, p, wait_s=wait_s) for p in files]
