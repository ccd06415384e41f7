"""Replay the gate against a history of real runs (README "History"): does ``gate --history`` pass
unchanged code and fail a planted slowdown?

``python -m reports.history.replay_gate RUN.json ... [--trials 10] [--plant distance.pairwise:matmul:1.3]``

The runs given are quiet runs of one commit on one machine (each a whole suite run). Trial t holds
one of them out as the current run (in turn) and builds a history of 5 runs from the others: the
real ones, then (``--mode mosaic``, the default) mosaics of them up to 5: each point (case × size ×
dtype × device) with its variants' and paired rounds taken whole from one of the other real runs,
drawn at random, so every number was measured in a real process and a pair's value spreads as its
real runs do; or (``--mode rounds``) a bootstrap of one run's rounds, which keeps that run's
between-run offset and so makes the baseline look quieter than real runs are. Every run is recorded
as a clean run of one commit on main (the first quiet run may come from a slightly earlier or dirty
tree). The current run is then gated as is (A/A) and with the planted variant's times multiplied by
the factor in every benchmark and paired round (that variant alone slower, as tests/plant_slowdown.py
plants it in a live run). No recheck is replayed: a recheck is another process of the current code,
and every real run is already the current run or in the baseline.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from reports import gate, load
from reports.history import store


def _stats(data: np.ndarray, old: dict) -> dict:
    q1, median, q3 = np.quantile(data, [0.25, 0.5, 0.75])
    return {
        **old,
        "min": float(data.min()),
        "max": float(data.max()),
        "mean": float(data.mean()),
        "stddev": float(data.std(ddof=1)) if data.size > 1 else 0.0,
        "median": float(median),
        "q1": float(q1),
        "q3": float(q3),
        "iqr": float(q3 - q1),
        "data": data.tolist(),
    }


def replay(doc: dict, seed: int) -> dict:
    """One more run like ``doc``: its rounds resampled with replacement."""
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(doc)
    for bench in out["benchmarks"]:
        data = np.asarray((bench.get("stats") or {}).get("data") or [], dtype=float)
        if data.size > 1:
            bench["stats"] = _stats(rng.choice(data, data.size), bench["stats"])
    for pair in out.get("pairs") or []:
        n = min(len(pair["fast_s"]), len(pair["slow_s"]))
        if n > 1:
            pick = rng.integers(0, n, n)
            pair["fast_s"] = [pair["fast_s"][i] for i in pick]
            pair["slow_s"] = [pair["slow_s"][i] for i in pick]
    out["datetime"] = f"{doc.get('datetime', '')}+replay{seed}"
    return out


def _point(info: dict) -> tuple:
    return tuple(str(info.get(k, "")) for k in ("case", "size_label", "dtype", "device", "part"))


def mosaic(docs: list[dict], seed: int) -> dict:
    """One more run made of real runs' pieces: each point (case × size × dtype × device), its
    variants' rounds and its paired rounds together, taken whole from one of ``docs`` drawn at
    random. Every number in it was measured in a real process, and a pair's value in the mosaic is
    one of its real runs' values, so the mosaics spread as the runs do (between-run noise included)."""
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(docs[0])
    source: dict = {}

    def pick(key):
        if key not in source:
            source[key] = int(rng.integers(0, len(docs)))
        return docs[source[key]]

    def benches(doc):
        return {
            (b.get("fullname"), json.dumps(b.get("extra_info"), sort_keys=True, default=str)): b
            for b in doc["benchmarks"]
        }

    by_doc = [benches(d) for d in docs]
    out["benchmarks"] = [
        copy.deepcopy(by_doc[docs.index(pick(_point(b.get("extra_info") or {})))].get(k, b))
        for k, b in benches(out).items()
    ]
    pairs_by = [
        {(_point(p), p["fast"], p["slow"], p.get("against")): p for p in d.get("pairs") or []} for d in docs
    ]
    out["pairs"] = [
        copy.deepcopy(pairs_by[docs.index(pick(_point(p)))].get(k, p))
        for k, p in ((k, p) for k, p in pairs_by[0].items())
    ]
    out["datetime"] = f"{docs[0].get('datetime', '')}+mosaic{seed}"
    return out


def plant(doc: dict, case: str, variant: str, factor: float) -> dict:
    out = copy.deepcopy(doc)
    for bench in out["benchmarks"]:
        info = bench.get("extra_info") or {}
        if info.get("case") == case and info.get("variant") == variant:
            data = np.asarray(bench["stats"].get("data") or [bench["stats"]["median"]], dtype=float) * factor
            bench["stats"] = _stats(data, bench["stats"])
    for pair in out.get("pairs") or []:
        if pair.get("case") == case:
            for side in ("fast", "slow"):
                if pair[side] == variant:
                    pair[f"{side}_s"] = [t * factor for t in pair[f"{side}_s"]]
    return out


def _clean(doc: dict, commit: str) -> dict:
    doc = copy.deepcopy(doc)
    doc["commit_info"] = {**(doc.get("commit_info") or {}), "id": commit, "dirty": False, "branch": "main"}
    return doc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.history.replay_gate")
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--plant", default="distance.pairwise:matmul:1.3")
    parser.add_argument("--last", type=int, default=5)
    parser.add_argument(
        "--mode",
        choices=("mosaic", "rounds"),
        default="mosaic",
        help="how runs beyond the real ones are made: mosaics of the real runs' points (default), or "
        "a bootstrap of one run's rounds",
    )
    args = parser.parse_args(argv)
    case, variant, factor = args.plant.split(":")
    docs = [load.read_json(p) for p in args.runs]
    commit = (docs[-1].get("commit_info") or {}).get("id", "replay")
    docs = [_clean(d, commit) for d in docs]
    tally = {"A/A": {}, "planted": {}}
    with tempfile.TemporaryDirectory(prefix="replay-gate-") as tmp:
        tmp = Path(tmp)
        for t in range(args.trials):
            held = t % len(docs)
            others = [d for i, d in enumerate(docs) if i != held]
            base = list(others)
            j = 0
            while len(base) < args.last:
                base.append(
                    mosaic(others, seed=1000 * t + j)
                    if args.mode == "mosaic"
                    else replay(others[(t + j) % len(others)], seed=1000 * t + j)
                )
                j += 1
            history = tmp / f"h{t}.sqlite"
            folder = tmp / f"t{t}"
            folder.mkdir()
            for i, d in enumerate(base):
                d = copy.deepcopy(d)
                d["datetime"] = f"2026-01-01T00:00:{i:02d}"
                (folder / f"b{i}.json").write_text(json.dumps(d))
            store.add_files(history, [folder])
            for what, current in (
                ("A/A", docs[held]),
                ("planted", plant(docs[held], case, variant, float(factor))),
            ):
                path = tmp / f"t{t}-{what.replace('/', '')}.json"
                path.write_text(json.dumps(current))
                code, text = gate.run(None, path, history=history, last=args.last)
                tally[what][code] = tally[what].get(code, 0) + 1
                regressed = [
                    line.split("|")[1].strip() + " " + line.split("|")[2].strip()
                    for line in text.splitlines()
                    if "**regressed**" in line
                ]
                unjudged = [
                    line.split("|")[1].strip() + " " + line.split("|")[2].strip()
                    for line in text.splitlines()
                    if f"| {gate.UNSTABLE} |" in line or f"| {gate.UNJUDGED} |" in line
                ]
                print(
                    f"trial {t} (current = {args.runs[held].name}) {what}: exit {code}; "
                    f"regressed {regressed}; "
                    f"re-measure {unjudged}",
                    flush=True,
                )
    for what, codes in tally.items():
        print(f"{what}: " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
