"""``python -m reports gate``: did this run regress against the stored baseline?

What is compared: the speedup of each case's claimed pair (its rule's fast variant over its slow
one, default optimized over naive) measured *within* each run. A machine that is uniformly slower
today (another job, a cooler CPU) slows both variants and leaves the speedup alone, so the gate is
portable between runners of one kind, where absolute times are not.

The statistic: the ratio r = current speedup / baseline speedup with a percentile-bootstrap
interval, resampling the per-round times of all four samples (naive and optimized, baseline and
current). A pair *regresses* only when the one-sided 95% upper confidence bound of r (the top of
the two-sided 90% interval) lies below ``1 - tolerance``: with 95% confidence it lost more than
the tolerance. The question is one-sided (a speedup that grew is never a failure). That is
"dropped by more than the tolerance" and
"statistically significant" in one test. Why not Mann–Whitney U on per-round ratios: rounds of
two variants are not paired (there is no per-round ratio to form), and a rank test answers "is
there any shift", not "is the shift larger than the tolerance"; on these machines a real shift of
a few percent between runs is normal (medians drift 4–8%) and must not fail the build.

Unstable samples: a sample whose IQR exceeds 25% of its median (quiet machines: 3-5%) was not
measuring the code alone (descheduled, throttled: bimodal rounds). A bootstrap of a handful of
such rounds is not to be trusted either way, so the pair is reported `unstable`, listed with the
suspects for re-measurement, and not judged.

Re-measuring: a pair that regresses can be measured again in the same job (``--recheck FILE``, the
workflow re-runs only the suspects, twice). The pair fails only if it regresses in the current run
*and in every recheck*; requiring all of k independent tests to fire makes the false-alarm rate
the product of their rates (≤ α^k), never larger, while a real regression, which persists, still
fires each time (power^k; ≥ 0.95² ≈ 0.90 at worst for a 25% slowdown here, in practice ~1).

Memory: peak bytes are counted (allocator statistics, replayed allocation events), not sampled,
so the memory saving (slow peak / fast peak) fails when it shrank by more than the tolerance,
without a significance test.

Exit status: 0 all holds; 1 a correctness check failed in the current run, a pair regressed, a
memory saving shrank, or a case present in the baseline vanished; 2 bad input (missing or corrupt
file, several machines on one side, no case in common).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reports import load, stats, summary

OK, REGRESSED, NOISY, NEW, VANISHED, INCOMPARABLE, FAILED, MEMORY, SLOWER, UNSTABLE = (
    "ok",
    "regressed",
    "ok (drop not significant)",
    "new",
    "vanished",
    "incomparable",
    "check failed",
    "memory saving shrank",
    "slower (absolute)",
    "unstable",
)
# A sample whose IQR exceeds this fraction of its median (quiet machines: 3-5%) comes from a
# machine that was not measuring the code (bimodal rounds: descheduled, throttled); the bootstrap
# of a median from a handful of such rounds is not trustworthy, so the pair is not judged.
MAX_SPREAD = 0.25
LEVEL = 0.90  # two-sided; its upper end is the one-sided 95% bound the gate tests
FAILING = {REGRESSED, VANISHED, FAILED, MEMORY, SLOWER}


@dataclass
class Line:
    case: str
    size: str
    where: str  # dtype and device
    pair: str
    baseline: float = math.nan
    current: float = math.nan
    change: float = math.nan  # current / baseline - 1
    ci: str = ""
    verdict: str = OK
    note: str = ""


def _machine(results: load.Results, path) -> str:
    machines = list(dict.fromkeys(results.runs["machine"]))
    if len(machines) != 1:
        raise load.ResultsError(
            f"{path}: holds results of {len(machines)} machines ({'; '.join(machines)}); "
            "gate one machine at a time"
        )
    return machines[0]


def _groups(results: load.Results) -> dict:
    return {
        (g.key["case"], g.key["size_label"], g.key["dtype"], g.key["device"]): g
        for g in summary.groups(results.rows)
    }


def _cases(results: load.Results) -> set:
    return set(results.rows["case"]) | set(results.outcomes["case"])


def _pairs(group, known) -> list[tuple[str, str]]:
    return [(f, s) for f, s, against in group.pairs(known.get(group.key["case"])) if against == "rule"]


def _tol(case_id, known, default) -> float:
    case = known.get(case_id)
    return case.gate_tolerance if case is not None and case.gate_tolerance is not None else default


def _regressed(base, cur, fast, slow, tol, seed) -> tuple[float, float, float, bool]:
    r, lo, hi = stats.ratio_of_speedups(
        base.data[slow], base.data[fast], cur.data[slow], cur.data[fast], level=LEVEL, seed=seed
    )
    return r, lo, hi, (not math.isnan(hi)) and hi < 1 - tol


def _spread(sample: np.ndarray) -> float:
    q1, median, q3 = np.quantile(sample, [0.25, 0.5, 0.75])
    return float((q3 - q1) / median) if median > 0 else math.inf


PAGE = 4096


def _memory_ratio(group, slow: str, fast: str) -> float:
    """Peak memory of `slow` over `fast`, each floored at one page: a variant that allocates
    nothing the allocator sees (in place, or a view) peaks at 0 bytes, and below a page the
    difference means nothing. NaN where a peak was not measured (the comparison is then skipped)."""
    return (group.peak[slow] + PAGE) / (group.peak[fast] + PAGE)


def compare(
    baseline: load.Results,
    current: load.Results,
    *,
    tolerance: float = 0.10,
    absolute: bool = False,
    rechecks: tuple = (),
    known: dict | None = None,
    names=("baseline", "current"),
) -> list[Line]:
    # The pairs and tolerances a case is gated on are those its current run recorded (harness.record).
    known = known if known is not None else current.cases_of()
    base_machine, cur_machine = _machine(baseline, names[0]), _machine(current, names[1])
    if not (_cases(baseline) & _cases(current)):
        raise load.ResultsError(f"{names[0]} and {names[1]} have no case in common")
    lines: list[Line] = []
    failed = current.outcomes[current.outcomes["outcome"] == "failed"]
    for r in failed.itertuples():
        lines.append(
            Line(
                r.case,
                r.size_label,
                f"{r.dtype} {r.device}".strip(),
                r.name,
                verdict=FAILED,
                note=r.reason.splitlines()[0][:200] if r.reason else "",
            )
        )
    base_groups, cur_groups = _groups(baseline), _groups(current)
    recheck_groups = [_groups(rc) for rc in rechecks]
    comparable = base_machine == cur_machine
    cur_cases = _cases(current)
    for key, base in base_groups.items():
        case_id, size, dtype, device = key
        tol = _tol(case_id, known, tolerance)
        for fast, slow in _pairs(base, known):
            line = Line(case_id, size, f"{dtype} {device}", f"{fast} ÷ {slow}")
            line.baseline = float(np.median(base.data[slow]) / np.median(base.data[fast]))
            cur = cur_groups.get(key)
            lines.append(line)
            if cur is None or fast not in cur.data or slow not in cur.data:
                line.verdict = VANISHED
                line.note = (
                    "case missing from the current run"
                    if case_id not in cur_cases
                    else "this size/pair missing from the current run"
                )
                continue
            line.current = float(np.median(cur.data[slow]) / np.median(cur.data[fast]))
            line.change = line.current / line.baseline - 1
            if not comparable:
                line.verdict, line.note = (
                    INCOMPARABLE,
                    f"baseline on {base_machine}, current on {cur_machine}",
                )
                continue
            spread = max(_spread(g.data[v]) for g in (base, cur) for v in (fast, slow))
            if spread > MAX_SPREAD:
                line.verdict, line.note = UNSTABLE, f"IQR/median {spread:.0%} > {MAX_SPREAD:.0%}: re-measure"
                continue
            r, lo, hi, bad = _regressed(base, cur, fast, slow, tol, seed=len(lines))
            line.ci = f"[{lo - 1:+.1%}, {hi - 1:+.1%}]" if not math.isnan(lo) else "too few rounds"
            if bad:
                again = [
                    g[key] for g in recheck_groups if key in g and fast in g[key].data and slow in g[key].data
                ]
                confirmed = [_regressed(base, g, fast, slow, tol, seed=len(lines))[3] for g in again]
                if all(confirmed):
                    line.verdict = REGRESSED
                    line.note = f"CI below -{tol:.0%}" + (
                        f"; confirmed by {len(again)} recheck(s)" if again else ""
                    )
                else:
                    line.verdict = NOISY
                    line.note = f"not confirmed by {confirmed.count(False)} of {len(again)} recheck(s)"
            elif r < 1 - tol:
                line.verdict, line.note = NOISY, f"below -{tol:.0%} but the CI reaches {hi - 1:+.1%}"
            base_mem, cur_mem = _memory_ratio(base, slow, fast), _memory_ratio(cur, slow, fast)
            if line.verdict == OK and base_mem > 1 and cur_mem < base_mem * (1 - tol):
                line.verdict = MEMORY
                line.note = f"memory ratio {base_mem:.3g}× → {cur_mem:.3g}×"
        if absolute and comparable and key in cur_groups:
            cur = cur_groups[key]
            for variant in base.data:
                if variant not in cur.data:
                    continue
                r, lo, hi = stats.ratio_of_medians(cur.data[variant], base.data[variant], seed=len(lines))
                if not math.isnan(lo) and lo > 1 + tol:
                    lines.append(
                        Line(
                            case_id,
                            size,
                            f"{dtype} {device}",
                            f"{variant} (absolute)",
                            float(np.median(base.data[variant])),
                            float(np.median(cur.data[variant])),
                            r - 1,
                            f"[{lo - 1:+.1%}, {hi - 1:+.1%}]",
                            SLOWER,
                            f"median time up > {tol:.0%}",
                        )
                    )
    for key, cur in cur_groups.items():
        if key not in base_groups:
            for fast, slow in _pairs(cur, known):
                value = float(np.median(cur.data[slow]) / np.median(cur.data[fast]))
                lines.append(
                    Line(key[0], key[1], f"{key[2]} {key[3]}", f"{fast} ÷ {slow}", current=value, verdict=NEW)
                )
    for case_id in sorted(_cases(baseline) - cur_cases):
        if not any(line.case == case_id and line.verdict == VANISHED for line in lines):
            lines.append(
                Line(case_id, "", "", "", verdict=VANISHED, note="case missing from the current run")
            )
    return lines


def exit_code(lines: list[Line]) -> int:
    return 1 if any(line.verdict in FAILING for line in lines) else 0


def _f(value, spec=".3g") -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


SINGLE_RUN_NOTE = (
    "Note: the baseline holds a single run. Some timings are bimodal between processes (measured here: "
    "a page-fault-bound variant at 10 ms in some runs and 34-36 ms in others), so a one-run baseline can "
    "make an unchanged pair look regressed; record baselines from two or more runs (a folder: runs are "
    "pooled)."
)


def markdown(lines: list[Line], tolerance: float, baseline_runs: int = 2) -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    code = exit_code(lines)
    head = [
        f"### Regression gate: {'FAIL' if code else 'pass'}",
        "",
        f"Within-run speedups (slow median ÷ fast median), current ÷ baseline, with a 90% bootstrap "
        f"interval of the change; a pair fails when the interval's top (its one-sided 95% bound) lies "
        f"below -{tolerance:.0%} (or the case's own tolerance).",
        "",
        *([SINGLE_RUN_NOTE, ""] if baseline_runs < 2 else []),
        "| case | size | dtype device | pair | baseline speedup | current speedup | change | 90% CI | "
        "verdict | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(lines, key=lambda line: (line.verdict not in FAILING, line.case, line.size))
    body = [
        f"| {cell(line.case)} | {cell(line.size)} | {cell(line.where)} | {cell(line.pair)} | "
        f"{_f(line.baseline)} | {_f(line.current)} | {_f(line.change, '+.1%')} | {cell(line.ci)} | "
        f"{'**' + line.verdict + '**' if line.verdict in FAILING else line.verdict} | {cell(line.note)} |"
        for line in order
    ]
    return "\n".join(head + body) + "\n"


def suspects(lines: list[Line]) -> str:
    """A pytest ``-k`` expression selecting the regressed and unstable case × size points (node IDs
    hold both), for re-measuring just those; empty when nothing regressed."""
    points = sorted({(line.case, line.size) for line in lines if line.verdict in (REGRESSED, UNSTABLE)})
    return " or ".join(f"({case} and {size})" if size else case for case, size in points)


def run(
    baseline_path,
    current_path,
    *,
    tolerance=0.10,
    absolute=False,
    recheck_paths=(),
    suspects_path=None,
    known=None,
) -> tuple[int, str]:
    if not 0 <= tolerance < 1:
        raise load.ResultsError(f"--tolerance {tolerance} must be in [0, 1)")
    baseline = load.load([baseline_path])
    current = load.load([current_path])
    rechecks = tuple(load.load([p]) for p in recheck_paths)
    lines = compare(
        baseline,
        current,
        tolerance=tolerance,
        absolute=absolute,
        rechecks=rechecks,
        known=known,
        names=(str(baseline_path), str(current_path)),
    )
    text = markdown(lines, tolerance, baseline_runs=len(baseline.runs))
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    if suspects_path:
        Path(suspects_path).write_text(suspects(lines) + "\n", encoding="utf-8")
    return exit_code(lines), text
