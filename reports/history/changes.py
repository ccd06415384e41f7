"""``python -m reports history changes``: every change in the history, found and dated.

A series is one pair at one size (its log speed-up per run, as the gate reads a run) of one machine
key, in the order the runs were made; or, with ``--by torch``, of one machine's hardware across
torch (and CUDA) versions, so that a step that coincides with a torch upgrade is named as one.
Change points come from `detect` (the detector chosen on this suite's own between-run noise:
docs/history.md, `reports.history.compare_detectors`); a verdict's series changes wherever it differs
from the run before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reports.history import store

# ruptures' PELT on the L2 cost with a BIC-like penalty PENALTY·σ̂²·log n, σ̂ the SD of the runs about
# the segments found (refitted until they settle): chosen, and PENALTY tuned to at most 1 false
# change point per 100 unchanged series, on a replay of the suite's own between-run noise
# (reports.history.compare_detectors; docs/history.md).
PENALTY = 3.5
MIN_RUNS = 4  # a series shorter than this has no change point to find
MIN_SIGMA = 1e-3  # floor of σ̂ (log): runs that agree to the digit do not make every wobble a change


def pelt(y: np.ndarray, penalty: float = PENALTY) -> list[int]:
    """ruptures' PELT, its penalty scaled by the noise within the segments it finds."""
    import ruptures

    n = y.size
    sigma, found = max(float(np.std(y)), MIN_SIGMA), []
    algo = ruptures.Pelt(model="l2", min_size=2, jump=1).fit(y)
    for _ in range(3):
        new = [int(b) for b in algo.predict(pen=penalty * sigma**2 * math.log(n)) if b < n]
        if new == found:
            break
        found = new
        bounds = [0, *found, n]
        residuals = np.concatenate([y[a:b] - y[a:b].mean() for a, b in zip(bounds, bounds[1:])])
        sigma = max(math.sqrt(float(residuals @ residuals) / max(n - len(bounds) + 1, 1)), MIN_SIGMA)
    return found


def detect(y) -> list[int]:
    """Indices of the runs that start a new segment (a change point before run i)."""
    y = np.asarray(y, dtype=float)
    return pelt(y) if y.size >= MIN_RUNS else []


@dataclass
class Change:
    group: str  # the machine key (or the hardware, --by torch)
    case: str
    size: str
    where: str
    pair: str  # "fast ÷ slow"; the claim for a verdict change ("" the technique)
    run_id: int
    time: str
    commit: str
    torch: str
    before: str  # speed-up (geometric mean of the segment) or verdict
    after: str
    change: float = math.nan  # after / before - 1 (speed-ups)
    previous_torch: str = ""
    kind: str = "speed-up"


def _group_column(by: str) -> str:
    if by not in ("machine", "torch"):
        raise store.HistoryError(f"--by {by}: choose machine or torch")
    return "machine" if by == "machine" else "hardware"


def _since(runs: pd.DataFrame, since: str | None) -> set:
    """The runs from ``since`` on: an ISO date/time, or a commit (prefix) whose first run starts it."""
    if not since:
        return set(runs["id"])
    commits = runs[runs["commit_id"].str.startswith(since)]
    if len(since) >= 7 and not commits.empty:
        if commits["commit_id"].nunique() > 1:
            raise store.HistoryError(f"--since {since}: names {commits['commit_id'].nunique()} commits")
        start = commits["time"].min()
    else:
        start = since
    return set(runs.loc[runs["time"] >= start, "id"])


def speedup_series(db, by: str = "machine") -> dict:
    """{(group, case, size, where, pair): DataFrame of run_id, time, commit_id, torch, log}, each
    in the order of its runs (one number per run: a pair measured twice in a run is averaged)."""
    col = _group_column(by)
    runs = store.runs(db)
    sp = store.speedups(db).merge(
        runs[["id", col, "time", "commit_id", "torch", "cuda"]], left_on="run_id", right_on="id"
    )
    sp["where"] = sp["dtype"] + " " + sp["device"]
    sp["pair"] = sp["fast"] + " ÷ " + sp["slow"]
    out = {}
    for key, g in sp.groupby([col, "case_id", "size_label", "where", "pair"], sort=False):
        g = (
            g.groupby(["run_id", "time", "commit_id", "torch", "cuda"], as_index=False)["log"]
            .mean()
            .sort_values(["time", "run_id"])
        )
        out[key] = g.reset_index(drop=True)
    return out


def speedup_changes(db, by: str = "machine", since: str | None = None) -> list[Change]:
    keep = _since(store.runs(db), since)
    out = []
    for (group, case, size, where, pair), g in speedup_series(db, by).items():
        y = g["log"].to_numpy()
        cps = detect(y)
        bounds = [0, *cps, y.size]
        for j, cp in enumerate(cps):
            r = g.iloc[cp]
            if r["run_id"] not in keep:
                continue
            before = math.exp(float(np.mean(y[bounds[j] : cp])))
            after = math.exp(float(np.mean(y[cp : bounds[j + 2]])))
            prev = g.iloc[cp - 1]
            out.append(
                Change(
                    group,
                    case,
                    size,
                    where,
                    pair,
                    int(r["run_id"]),
                    str(r["time"]),
                    str(r["commit_id"]),
                    _versions(r),
                    f"{before:.3g}",
                    f"{after:.3g}",
                    after / before - 1,
                    _versions(prev),
                )
            )
    return out


def _versions(r) -> str:
    return str(r["torch"]) + (f", CUDA {r['cuda']}" if r["cuda"] else "")


def verdict_changes(db, by: str = "machine", since: str | None = None) -> list[Change]:
    col = _group_column(by)
    runs = store.runs(db)
    keep = _since(runs, since)
    v = store.verdicts(db).merge(
        runs[["id", col, "time", "commit_id", "torch", "cuda"]], left_on="run_id", right_on="id"
    )
    out = []
    for (group, case, claim), g in v.groupby([col, "case_id", "claim"], sort=False):
        g = g.sort_values(["time", "run_id"]).reset_index(drop=True)
        for i in range(1, len(g)):
            prev, r = g.iloc[i - 1], g.iloc[i]
            if r["verdict"] != prev["verdict"] and r["run_id"] in keep:
                out.append(
                    Change(
                        group,
                        case,
                        "",
                        "",
                        claim,
                        int(r["run_id"]),
                        str(r["time"]),
                        str(r["commit_id"]),
                        _versions(r),
                        str(prev["verdict"]),
                        str(r["verdict"]),
                        previous_torch=_versions(prev),
                        kind="verdict",
                    )
                )
    return out


def changes(history, by: str = "machine", since: str | None = None) -> list[Change]:
    with store.connect(history, create=False) as db:
        found = speedup_changes(db, by, since) + verdict_changes(db, by, since)
    return sorted(found, key=lambda c: (c.group, c.time, c.run_id, c.case, c.size, c.pair))


def markdown(found: list[Change], by: str = "machine") -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    if not found:
        return "No change point in the history.\n"
    lines = [
        f"### Change points ({len(found)})",
        "",
        "| "
        + ("hardware" if by == "torch" else "machine")
        + " | run | time | commit | torch | case | size | "
        "dtype device | pair / claim | before | after | change |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in found:
        torch = (
            c.torch
            if c.torch == c.previous_torch or not c.previous_torch
            else f"{c.previous_torch} → {c.torch}"
        )
        what = c.pair if c.kind == "speed-up" else f"verdict {c.pair or '(technique)'}"
        change = f"{c.change:+.1%}" if not math.isnan(c.change) else ""
        lines.append(
            f"| {cell(c.group)} | {c.run_id} | {cell(c.time[:19])} | {cell(c.commit[:10])} | {cell(torch)} | "
            f"{cell(c.case)} | {cell(c.size)} | {cell(c.where)} | {cell(what)} | {cell(c.before)} | "
            f"{cell(c.after)} | {change} |"
        )
    return "\n".join(lines) + "\n"
