"""Which change-point detector the history ships, chosen with numbers (docs/history.md).

Two steps:

``python -m reports.history.compare_detectors extract RESULTS... --out tests/data/history/noise.json``
    reads quiet runs of one commit on one machine and keeps, per gated pair and size (the pairs
    `reports.gate` compares), each run's log speed-up (`reports.gate.Runs`): the suite's own
    between-run noise, a few kB.

``python -m reports.history.compare_detectors run --noise … --detectors asv,ruptures,… --out X.json``
    replays series built from that noise: per series, a pair's own residuals about its mean (scaled
    by √(n/(n−1)), drawn with replacement), 30 runs long; a drop of 5%, 10% or 20% of the speed-up
    is injected at run 20 (0-based). Each detector sees the history as it grows (runs 0 … 20+k−1,
    k = 1 … 10 after the step) and a step counts as found at the first k where a change point lies
    within one run of 20; an unchanged 30-run series counts every change point it reports as
    false. Each detector's threshold is tuned on a calibration set (another seed) to the loosest
    setting with at most 1 false change point per 100 unchanged series, then measured on the test
    set. Detectors run in whichever interpreter has their library (apache-otava pins numpy 2.2 and
    signal-processing-algorithms numpy 1.26: one virtual environment each), so each run writes
    its own JSON and ``table X.json Y.json …`` merges them into the markdown table of docs/history.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

START, LENGTH, AFTER = 20, 30, 10
STEPS = (0.05, 0.10, 0.20)
NEAR = 1  # a change point within this many runs of the step finds it


# the noise ------------------------------------------------------------------------------------
def extract(paths, out: Path) -> None:
    from reports import gate, load

    results = load.load(paths)
    runs = gate.Runs(results)
    known = results.cases_of()
    series = []
    for key, group in gate.groups_by_key(results).items():
        for fast, slow in gate.gated_pairs(group, known):
            used = gate.judged_on(runs.of(key, fast, slow))
            if len(used) >= 3:
                series.append(
                    {
                        "key": [*key, f"{fast} ÷ {slow}"],
                        "runs": [r.run for r in used],
                        "log": [r.log for r in used],
                    }
                )
    machines = sorted(set(results.runs["machine"]))
    doc = {
        "machine": machines,
        "commits": sorted(set(results.runs["commit"])),
        "files": [str(p) for p in paths],
        "series": series,
    }
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sds = [float(np.std(s["log"], ddof=1)) for s in series]
    print(
        f"{out}: {len(series)} pairs × sizes; between-run SD quartiles "
        f"{np.percentile(sds, [25, 50, 75]).round(4)}"
    )


def residuals(noise: dict) -> list[np.ndarray]:
    out = []
    for s in noise["series"]:
        y = np.asarray(s["log"], dtype=float)
        out.append((y - y.mean()) * math.sqrt(y.size / (y.size - 1)))
    return out


def make_series(res: list[np.ndarray], count: int, seed: int, step: float) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        r = res[i % len(res)]
        y = rng.choice(r, LENGTH) + 1.0  # a log speed-up of 1 (2.7×): only differences matter
        if step:
            y[START:] += math.log(1 - step)
        out.append(y)
    return out


# the detectors: each (series, threshold) → change-point indices (first run of a new segment) ----
def asv_detect(y, threshold):
    """asv's own step detection (Potts model, γ chosen by asv), keeping steps whose size in log
    speed-up is at least the threshold (asv reports a regression above a relative threshold)."""
    from asv import step_detect

    steps = step_detect.detect_steps(list(y))
    return [b[0] for a, b in zip(steps, steps[1:]) if abs(b[2] - a[2]) >= threshold]


def ruptures_detect(y, threshold):
    """ruptures' PELT on the L2 cost, penalty threshold · σ̂² · log n, σ̂ the series' own SD (a
    step inflates it, which only makes the penalty stricter). (σ̂ from the MAD of successive
    differences was tried first: runs that agree to the digit make it tiny, and unchanged series
    then showed 65-120 false change points per 100 at any penalty tried.)"""
    import ruptures

    y = np.asarray(y, dtype=float)
    pen = threshold * max(float(np.std(y)), 1e-3) ** 2 * math.log(y.size)
    return [b for b in ruptures.Pelt(model="l2", min_size=2, jump=1).fit(y).predict(pen=pen) if b < y.size]


def ruptures_segments_detect(y, threshold):
    """The same, σ̂ taken from the residuals about the segments found (PELT refitted until the
    segments settle, at most 3 times): a step no longer inflates the noise it is judged against.
    What `reports.history.changes.detect` ships."""
    from reports.history import changes

    return changes.pelt(np.asarray(y, dtype=float), threshold)


def otava_detect(y, threshold):
    """Apache Otava (Hunter): e-divisive means with a t-test significance, at max_pvalue threshold."""
    from otava.analysis import compute_change_points

    cps, _ = compute_change_points(list(map(float, y)), window_len=LENGTH, max_pvalue=threshold)
    return [cp.index for cp in cps]


def spa_detect(y, threshold):
    """MongoDB's signal-processing-algorithms e-divisive, permutation test at pvalue threshold."""
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    np.random.seed(0)
    return sorted(int(i) for i in e_divisive(np.asarray(y, dtype=float), pvalue=threshold, permutations=100))


_PRIOR = None


def gate_detect(y, threshold):
    """The gate's own t test (reports.gate.judge, the machine prior fitted as the gate does), slid
    along the series: at run i, the 5 runs before against the up to 5 from i; a change point where
    the gate would fail it (either direction), at tolerance `threshold`; flags within 5 runs of
    one another are one change point."""
    from reports import gate

    sigma0, d0 = _PRIOR
    out = []
    for i in range(5, len(y)):
        base = [gate.RunSpeedup("b", float(v), 0.0, 20, 0.0, "") for v in y[i - 5 : i]]
        cur = [gate.RunSpeedup("c", float(v), 0.0, 20, 0.0, "") for v in y[i : i + 5]]
        down = gate.judge(base, cur, threshold, sigma0, d0).verdict == gate.REGRESSED
        flip = lambda rs: [gate.RunSpeedup("x", -r.log, 0.0, 20, 0.0, "") for r in rs]  # noqa: E731
        up = gate.judge(flip(base), flip(cur), threshold, sigma0, d0).verdict == gate.REGRESSED
        if (down or up) and not (out and i - out[-1] <= 5):
            out.append(i)
    return out


DETECTORS = {
    "asv": (asv_detect, [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3]),
    "ruptures": (ruptures_detect, [2, 2.5, 3, 3.5, 4, 6, 8]),
    "ruptures_segments": (ruptures_segments_detect, [3, 3.5, 4, 5, 6, 8]),
    "otava": (otava_detect, [0.05, 0.01, 0.001, 0.0001]),
    "spa": (spa_detect, [0.05, 0.02, 0.01]),
    "gate": (gate_detect, [0.02, 0.05, 0.10]),
}
NAMES = {
    "asv": "asv 0.6 `step_detect.detect_steps` (Potts), step ≥ threshold",
    "ruptures": "ruptures 1.1 PELT (L2 cost), penalty threshold·SD²·log n",
    "ruptures_segments": "ruptures 1.1 PELT (L2 cost), penalty threshold·σ̂²·log n, σ̂ within the segments "
    "(shipped)",
    "otava": "Apache Otava 0.8 `compute_change_points` (e-divisive + t), max p-value",
    "spa": "MongoDB signal-processing-algorithms 2.1 `e_divisive`, p-value",
    "gate": "the gate's t test (reports.gate.judge), the 5 runs before each run against the 5 from it; "
    "tolerance",
}


QUIET = 0.03  # a pair whose runs' log speed-ups have an SD up to this is "quiet" in the breakdown


def false_rate(detect, threshold, series) -> float:
    return 100.0 * sum(len(detect(y, threshold)) for y in series) / len(series)


def _quiet(res, count) -> np.ndarray:
    return np.array([float(np.std(res[i % len(res)], ddof=0)) <= QUIET for i in range(count)])


def found_after(detect, threshold, y) -> int | None:
    for k in range(1, AFTER + 1):
        if any(abs(cp - START) <= NEAR for cp in detect(y[: START + k], threshold)):
            return k
    return None


def evaluate(name: str, res, count: int) -> dict:
    detect, grid = DETECTORS[name]
    t0 = time.perf_counter()
    calib = make_series(res, count, 101, 0.0)
    rates = {t: false_rate(detect, t, calib) for t in grid}
    ok = [t for t in grid if rates[t] <= 1.0]
    threshold = ok[0] if ok else min(grid, key=lambda t: rates[t])
    unchanged = make_series(res, count, 202, 0.0)
    quiet = _quiet(res, count)
    falses = np.array([len(detect(y, threshold)) for y in unchanged])
    row = {
        "detector": name,
        "threshold": threshold,
        "calibration_false_per_100": rates,
        "false_per_100": 100.0 * falses.mean(),
        "quiet_false_per_100": 100.0 * falses[quiet].mean(),
        "series": count,
        "quiet_series": int(quiet.sum()),
    }
    for step in STEPS:
        ks = [found_after(detect, threshold, y) for y in make_series(res, count, 303 + int(step * 100), step)]
        hit = [k for k in ks if k is not None]
        row[f"step{int(step * 100)}"] = {
            "within5": sum(k <= 5 for k in hit) / count,
            "within10": len(hit) / count,
            "median_runs": float(np.median(hit)) if hit else None,
            "quiet_within5": sum(k is not None and k <= 5 for k, q in zip(ks, quiet) if q)
            / max(quiet.sum(), 1),
        }
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def run(noise_path: Path, names: list[str], count: int, out: Path) -> None:
    global _PRIOR
    noise = json.loads(noise_path.read_text(encoding="utf-8"))
    res = residuals(noise)
    if "gate" in names:
        from reports import gate

        _PRIOR = gate.machine_prior(
            [
                [gate.RunSpeedup(str(i), v, 0.0, 20, 0.0, "") for i, v in enumerate(s["log"])]
                for s in noise["series"]
            ]
        )
    rows = []
    for name in names:
        rows.append(evaluate(name, res, count))
        print(json.dumps(rows[-1]), flush=True)
    out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def table(paths) -> str:
    rows = [r for p in paths for r in json.loads(Path(p).read_text(encoding="utf-8"))]
    head = (
        "| detector | threshold | false change points / 100 unchanged series (quiet pairs) | 5% step: found "
        "≤ 5 runs (≤ 10) · median runs · quiet pairs ≤ 5 | 10% step | 20% step |\n"
        "|---|---|---|---|---|---|\n"
    )

    def cell(s):
        med = "–" if s["median_runs"] is None else f"{s['median_runs']:g}"
        return f"{s['within5']:.0%} ({s['within10']:.0%}) · {med} · {s['quiet_within5']:.0%}"

    body = "".join(
        f"| {NAMES[r['detector']]} | {r['threshold']:g} | "
        f"{r['false_per_100']:.1f} ({r['quiet_false_per_100']:.1f}) | "
        f"{cell(r['step5'])} | {cell(r['step10'])} | {cell(r['step20'])} |\n"
        for r in rows
    )
    return head + body


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.history.compare_detectors")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract")
    ex.add_argument("results", nargs="+")
    ex.add_argument("--out", type=Path, required=True)
    rn = sub.add_parser("run")
    rn.add_argument("--noise", type=Path, default=Path("tests/data/history/noise.json"))
    rn.add_argument("--detectors", default=",".join(DETECTORS))
    rn.add_argument("--series", type=int, default=300)
    rn.add_argument("--out", type=Path, required=True)
    tb = sub.add_parser("table")
    tb.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "extract":
        extract(args.results, args.out)
    elif args.command == "run":
        run(args.noise, args.detectors.split(","), args.series, args.out)
    else:
        print(table(args.files), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
