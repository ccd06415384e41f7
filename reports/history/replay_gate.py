"""Replay the gate against a history of real runs (docs/history.md): does ``gate --history`` pass
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
plants it in a live run).

With ``--rechecks N`` the trials replay the CI workflow (.github/workflows/benchmarks.yml) whole:
N more real runs are held out of the history as the rechecks, each cut to the points the first
gate named as suspects (what ``pytest -k "$suspects"`` re-measures), the planted slowdown in them
too, and where the first gate exits 1 or 3 the gate runs again with them; the final exit is
counted. That needs 1 + N + the history's runs of one commit (8 for the workflow's 5 and 2): the
history is made of real runs only, mosaics filling it where fewer are left. Trial t takes run
t mod n as the current one and, on each pass over the runs, the next N of the others as rechecks.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from harness.contract.record import KEY_COLUMNS
from reports import gate, load
from reports.gate import cli
from reports.history import ingest


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
    return tuple(str(info.get(k, "")) for k in (*KEY_COLUMNS, "part"))


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


def suspect_points(expression: str) -> set[tuple[str, str]]:
    """(case, size) of each suspect in a ``--suspects`` expression (reports.gate.text.suspects:
    ``(case and size) or case or ...``); size '' where the whole case is a suspect."""
    points = set()
    for term in filter(None, (t.strip() for t in expression.split(" or "))):
        case, _, size = term.strip("()").partition(" and ")
        points.add((case.strip(), size.strip()))
    return points


def cut_to(doc: dict, points: set[tuple[str, str]], keep: bool = True) -> dict:
    """``doc`` as a re-run of just those points would have made it: their benchmarks, pairs and
    outcomes, nothing else; with ``keep=False``, everything but them."""

    def kept(case, size) -> bool:
        return ((case, size) in points or (case, "") in points) == keep

    out = copy.deepcopy(doc)
    out["benchmarks"] = [
        b
        for b in out["benchmarks"]
        if kept((b.get("extra_info") or {}).get("case"), (b.get("extra_info") or {}).get("size_label", ""))
    ]
    out["pairs"] = [p for p in out.get("pairs") or [] if kept(p.get("case"), p.get("size_label", ""))]
    out["outcomes"] = [o for o in out.get("outcomes") or [] if kept(o.get("case"), o.get("size_label", ""))]
    return out


def held_out(trial: int, runs: int, rechecks: int) -> tuple[int, list[int]]:
    """The current run of a trial and its rechecks: run `trial` mod `runs`, and the next `rechecks`
    of the others, moved on by `rechecks` on each pass over the runs."""
    current = trial % runs
    others = [i for i in range(runs) if i != current]
    shift = (trial // runs) * rechecks
    return current, [others[(shift + k) % len(others)] for k in range(rechecks)]


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
        "--leave-out",
        action="append",
        default=[],
        metavar="CASE:SIZE",
        help="leave this point out of every run (what the gate would say were it measured steadily)",
    )
    parser.add_argument(
        "--rechecks",
        type=int,
        default=0,
        help="replay the workflow's rechecks: this many more real runs held out, cut to the suspects",
    )
    parser.add_argument(
        "--mode",
        choices=("mosaic", "rounds"),
        default="mosaic",
        help="how runs beyond the real ones are made: mosaics of the real runs' points (default), or "
        "a bootstrap of one run's rounds",
    )
    args = parser.parse_args(argv)
    if bad := [x for x in args.leave_out if ":" not in x]:
        parser.error(f"--leave-out takes CASE:SIZE, not {bad[0]!r}")
    case, variant, factor = args.plant.split(":")
    docs = [load.read_json(p) for p in args.runs]
    commit = (docs[-1].get("commit_info") or {}).get("id", "replay")
    docs = [_clean(d, commit) for d in docs]
    if args.leave_out:
        gone = {tuple(x.split(":", 1)) for x in args.leave_out}
        docs = [cut_to(d, gone, keep=False) for d in docs]
    tally = {"A/A": {}, "planted": {}}
    with tempfile.TemporaryDirectory(prefix="replay-gate-") as tmp:
        tmp = Path(tmp)
        for t in range(args.trials):
            held, recheck_of = held_out(t, len(docs), args.rechecks)
            others = [d for i, d in enumerate(docs) if i != held and i not in recheck_of]
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
            ingest.add_files(history, [folder])
            for what, current in (
                ("A/A", docs[held]),
                ("planted", plant(docs[held], case, variant, float(factor))),
            ):
                path = tmp / f"t{t}-{what.replace('/', '')}.json"
                path.write_text(json.dumps(current))
                suspects = tmp / "suspects.txt"
                code, text = cli.run(None, path, history=history, last=args.last, suspects_path=suspects)
                first = code
                if code in (1, 3) and recheck_of:
                    points = suspect_points(suspects.read_text(encoding="utf-8").strip())
                    again = []
                    for k, i in enumerate(recheck_of):
                        doc = docs[i] if what == "A/A" else plant(docs[i], case, variant, float(factor))
                        again.append(tmp / f"t{t}-{what.replace('/', '')}-recheck{k}.json")
                        again[-1].write_text(json.dumps(cut_to(doc, points)))
                    code, text = cli.run(None, path, history=history, last=args.last, recheck_paths=again)
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
                rechecked = (
                    f" (first gate {first}; rechecks {[args.runs[i].name for i in recheck_of]})"
                    if recheck_of and first in (1, 3)
                    else ""
                )
                print(
                    f"trial {t} (current = {args.runs[held].name}) {what}: exit {code}{rechecked}; "
                    f"regressed {regressed}; "
                    f"re-measure {unjudged}",
                    flush=True,
                )
    for what, codes in tally.items():
        print(f"{what}: " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
