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

Paired rounds: where both runs timed the pair side by side (``pairs``, schema 3), each run's
speedup is the median of its paired rounds' ratios, and r compares those medians (a bootstrap of
the log ratios of both runs). The ratios cancel what the two sides of a round shared, so runs
pooled from two processes, whose absolute times differ, are not bimodal as a ratio: the pooled
baseline the README recommends is judged, where its pooled raw times were always "unstable".

Unstable samples: a sample whose IQR exceeds 25% of its median (quiet machines: 3-5%; for paired
rounds the IQR of the log ratios) was not measuring the code alone (descheduled, throttled:
bimodal rounds). It is not judged on those rounds: it is listed with the suspects, and judged on
the re-measurements (``--recheck``) whose rounds are stable. If none is, the gate could not judge
it, and says so with its own exit status (3) rather than passing it; ``--allow-unjudged`` passes
it (exit 0) for a user who accepts that.

Re-measuring: a pair that regresses can be measured again in the same job (``--recheck FILE``, the
workflow re-runs only the suspects, twice). The pair fails only if it regresses in the current run
*and in every recheck*; requiring all of k independent tests to fire makes the false-alarm rate
the product of their rates (≤ α^k), never larger, while a real regression, which persists, still
fires each time (power^k; ≥ 0.95² ≈ 0.90 at worst for a 25% slowdown here, in practice ~1).

Memory: peak bytes are counted (allocator statistics, replayed allocation events), not sampled,
so the memory saving (slow peak / fast peak) fails when it shrank by more than the tolerance,
without a significance test.

Which pairs: every case that times anything is gated on its compared pairs (its rule's, else
optimized over naive, else the library over the naive way: harness.rules.compared_pairs), so a
case judged by its findings that times the library against the notes' way is gated too.

Exit status: 0 all holds; 1 a correctness check failed in the current run, a pair regressed, a
memory saving shrank, or a case present in the baseline vanished, and nothing else; 2 bad input
(missing or corrupt file, an impossible time, several machines on one side, no case in common,
an unwritable --suspects); 3 could not judge: a pair whose rounds were unstable in the current run
and in every recheck (``--allow-unjudged`` makes that 0).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reports import load, stats, summary

UNJUDGED = "could not judge"
EXIT_UNJUDGED = 3
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
    return [
        (f, s)
        for f, s, against in group.pairs(known.get(group.key["case"]))
        if against in ("rule", "context")
    ]


def _paired_logs(results: load.Results) -> dict:
    """(case, size, dtype, device, fast, slow) → log(slow/fast) of every paired round, runs pooled."""
    pairs = results.pairs
    if pairs is None or pairs.empty:
        return {}
    out = {}
    keys = ["case", "size_label", "dtype", "device", "fast", "slow"]
    for key, part in pairs.groupby(keys, sort=False):
        out[key] = np.concatenate(
            [np.log(s) - np.log(f) for f, s in zip(part["fast_data"], part["slow_data"])]
        )
    return out


def _between_runs(results: load.Results) -> dict:
    """(case, size, dtype, device, fast, slow) → how far apart the runs of a pooled baseline put
    the pair's paired speed-up: max ÷ min of the runs' medians − 1 (0 for one run). A pair whose
    unchanged runs differ by more than the tolerance (a page-fault-bound temporary, bimodal
    between processes) cannot be told from a regression within that tolerance."""
    pairs = results.pairs
    if pairs is None or pairs.empty or "run" not in pairs:
        return {}
    out = {}
    keys = ["case", "size_label", "dtype", "device", "fast", "slow"]
    for key, part in pairs.groupby(keys, sort=False):
        medians = [
            float(
                np.median(
                    np.concatenate([np.log(s) - np.log(f) for f, s in zip(g["fast_data"], g["slow_data"])])
                )
            )
            for _, g in part.groupby("run", sort=False)
        ]
        out[key] = float(np.exp(max(medians) - min(medians)) - 1) if len(medians) > 1 else 0.0
    return out


def _busy(results: load.Results) -> dict:
    """(case, size, dtype, device, fast, slow) → why the machine was busy while the pair was timed
    ('' where it was quiet), from the load probe each pair records."""
    pairs = results.pairs
    if pairs is None or pairs.empty or "busy" not in pairs:
        return {}
    keys = ["case", "size_label", "dtype", "device", "fast", "slow"]
    return {
        key: next((str(b) for b in part["busy"] if isinstance(b, str) and b), "")
        for key, part in pairs.groupby(keys, sort=False)
    }


class Sample:
    """One run's view of a pair: its speedup, how stable its rounds were, and the bootstrap draws
    the gate's interval is made from (paired log ratios where the run timed the pair side by side,
    else the two variants' rounds taken apart)."""

    def __init__(self, group, fast, slow, logs=None):
        self.logs = logs
        self.group, self.fast, self.slow = group, fast, slow
        if logs is not None:
            self.speedup = float(np.exp(np.median(logs)))
            q1, q3 = np.quantile(logs, [0.25, 0.75])
            self.spread = float(q3 - q1)
        else:
            self.speedup = float(np.median(group.data[slow]) / np.median(group.data[fast]))
            self.spread = max(_spread(group.data[v]) for v in (fast, slow))

    def log_draws(self, rng, boot):
        if self.logs is not None:
            return np.log(stats.boot_medians(np.exp(self.logs), rng, boot))
        return np.log(stats.boot_medians(self.group.data[self.slow], rng, boot)) - np.log(
            stats.boot_medians(self.group.data[self.fast], rng, boot)
        )

    def rounds(self) -> int:
        return (
            self.logs.size
            if self.logs is not None
            else min(self.group.data[v].size for v in (self.fast, self.slow))
        )


def _sample(results_groups, results_logs, key, fast, slow):
    group = results_groups.get(key)
    if group is None or fast not in group.data or slow not in group.data:
        return None
    return Sample(group, fast, slow, results_logs.get((*key, fast, slow)))


def _tol(case_id, known, default) -> float:
    case = known.get(case_id)
    return case.gate_tolerance if case is not None and case.gate_tolerance is not None else default


def _regressed(base: Sample, cur: Sample, tol, seed, boot: int = 2000) -> tuple[float, float, float, bool]:
    """current speedup ÷ baseline speedup with its 90% bootstrap interval; regressed when the
    interval's top (the one-sided 95% bound) lies below 1 - tol."""
    r = cur.speedup / base.speedup
    if min(base.rounds(), cur.rounds()) < stats.MIN_ROUNDS:
        return r, math.nan, math.nan, False
    rng = np.random.default_rng(seed)
    draws = np.exp(cur.log_draws(rng, boot) - base.log_draws(rng, boot))
    lo, hi = stats.interval(draws, LEVEL)
    return r, lo, hi, hi < 1 - tol


def _spread(sample: np.ndarray) -> float:
    q1, median, q3 = np.quantile(sample, [0.25, 0.5, 0.75])
    return float((q3 - q1) / median) if median > 0 else math.inf


PAGE = 4096


def _memory_ratio(group, slow: str, fast: str) -> float:
    """Peak memory of `slow` over `fast`, each floored at one page: a variant that allocates
    nothing the allocator sees (in place, or a view) peaks at 0 bytes, and below a page the
    difference means nothing. NaN where a peak was not measured (the comparison is then skipped)."""
    return (group.peak[slow] + PAGE) / (group.peak[fast] + PAGE)


def _unstable(sample: Sample) -> bool:
    """Rounds taken apart whose spread says they were not measuring the code alone: their
    bootstrap interval is not to be trusted either way. Paired rounds are judged by their own
    interval, which their spread already widens."""
    return sample.logs is None and sample.spread > MAX_SPREAD


def _judge_pair(base: Sample, cur: Sample, again: list, tol: float, seed: int) -> tuple[str, str, str]:
    """(verdict, note, interval) of one pair. A pair passes only where the interval of current ÷
    baseline shows the drop is smaller than the tolerance; it regresses where the interval's top
    is below 1 - tol in the run and in every recheck; where the interval straddles 1 - tol (or the
    rounds were unstable) the run could not tell, and the stable rechecks decide. If none can,
    it is `could not judge`: never passed on a measurement that could not have seen the regression."""

    def interval(sample):
        r, lo, hi, bad = _regressed(base, sample, tol, seed)
        ci = f"[{lo - 1:+.1%}, {hi - 1:+.1%}]" if not math.isnan(lo) else "too few rounds"
        if _unstable(base) or _unstable(sample) or math.isnan(lo):
            return "unknown", ci
        if bad:
            return "regressed", ci
        return ("ok" if lo >= 1 - tol else "unknown"), ci

    said, ci = interval(cur)
    if said == "regressed":
        confirmed = [interval(s)[0] == "regressed" for s in again]
        if all(confirmed):
            return (
                REGRESSED,
                f"CI below -{tol:.0%}" + (f"; confirmed by {len(again)} recheck(s)" if again else ""),
                ci,
            )
        return NOISY, f"not confirmed by {confirmed.count(False)} of {len(again)} recheck(s)", ci
    if said == "ok":
        return OK, "", ci
    # The current run could not tell: the rechecks that can decide.
    decided = [interval(s) for s in again]
    told = [d for d, _ in decided if d != "unknown"]
    if told and all(d == "regressed" for d in told):
        return REGRESSED, f"current run could not tell; {len(told)} recheck(s) show the drop", ci
    if told and all(d == "ok" for d in told):
        return OK, f"current run could not tell; {len(told)} recheck(s) show no drop beyond -{tol:.0%}", ci
    why = (
        "rounds unstable (IQR/median > 25%)"
        if _unstable(base) or _unstable(cur)
        else (f"the interval {ci} straddles -{tol:.0%}")
    )
    if not again:
        return UNSTABLE, f"{why}: re-measure (--recheck)", ci
    return UNJUDGED, f"{why}, and no recheck decided it ({len(again)} given)", ci


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
    base_logs, cur_logs = _paired_logs(baseline), _paired_logs(current)
    base_spread, cur_busy = _between_runs(baseline), _busy(current)
    recheck_sides = [(_groups(rc), _paired_logs(rc)) for rc in rechecks]
    comparable = base_machine == cur_machine
    cur_cases = _cases(current)
    for key, base_group in base_groups.items():
        case_id, size, dtype, device = key
        tol = _tol(case_id, known, tolerance)
        for fast, slow in _pairs(base_group, known):
            line = Line(case_id, size, f"{dtype} {device}", f"{fast} ÷ {slow}")
            base = _sample(base_groups, base_logs, key, fast, slow)
            line.baseline = base.speedup
            cur = _sample(cur_groups, cur_logs, key, fast, slow)
            lines.append(line)
            if cur is None:
                line.verdict = VANISHED
                line.note = (
                    "case missing from the current run"
                    if case_id not in cur_cases
                    else "this size/pair missing from the current run"
                )
                continue
            line.current = cur.speedup
            line.change = line.current / line.baseline - 1
            if not comparable:
                line.verdict, line.note = (
                    INCOMPARABLE,
                    f"baseline on {base_machine}, current on {cur_machine}",
                )
                continue
            again = [s for g, logs in recheck_sides if (s := _sample(g, logs, key, fast, slow)) is not None]
            # The baseline's own runs set the floor of what an unchanged run can drop.
            spread = base_spread.get((*key, fast, slow), 0.0)
            pair_tol = min(max(tol, 1 - 1 / (1 + spread)), 0.95)
            verdict, note, ci = _judge_pair(base, cur, again, pair_tol, seed=len(lines))
            busy = cur_busy.get((*key, fast, slow), "")
            if busy and verdict in (REGRESSED, NOISY) and not again:
                # Noise is never a finding: a drop measured on a busy machine is re-measured.
                verdict, note = UNSTABLE, f"timed on a busy machine ({busy}): re-measure (--recheck)"
            if pair_tol > tol:
                note = (note + "; " if note else "") + (
                    f"tolerance {pair_tol:.0%}: the baseline's runs differ by {spread:.0%} on this pair"
                )
            line.verdict, line.note, line.ci = verdict, note, ci
            base_mem, cur_mem = (
                _memory_ratio(base_group, slow, fast),
                _memory_ratio(cur_groups[key], slow, fast),
            )
            if line.verdict == OK and base_mem > 1 and cur_mem < base_mem * (1 - tol):
                line.verdict = MEMORY
                line.note = f"memory ratio {base_mem:.3g}× → {cur_mem:.3g}×"
        if absolute and comparable and key in cur_groups:
            cur = cur_groups[key]
            for variant in base_group.data:
                if variant not in cur.data:
                    continue
                r, lo, hi = stats.ratio_of_medians(
                    cur.data[variant], base_group.data[variant], seed=len(lines)
                )
                if not math.isnan(lo) and lo > 1 + tol:
                    lines.append(
                        Line(
                            case_id,
                            size,
                            f"{dtype} {device}",
                            f"{variant} (absolute)",
                            float(np.median(base_group.data[variant])),
                            float(np.median(cur.data[variant])),
                            r - 1,
                            f"[{lo - 1:+.1%}, {hi - 1:+.1%}]",
                            SLOWER,
                            f"median time up > {tol:.0%}",
                        )
                    )
    for key, cur_group in cur_groups.items():
        if key not in base_groups:
            for fast, slow in _pairs(cur_group, known):
                value = _sample(cur_groups, cur_logs, key, fast, slow).speedup
                lines.append(
                    Line(key[0], key[1], f"{key[2]} {key[3]}", f"{fast} ÷ {slow}", current=value, verdict=NEW)
                )
    for case_id in sorted(_cases(baseline) - cur_cases):
        if not any(line.case == case_id and line.verdict == VANISHED for line in lines):
            lines.append(
                Line(case_id, "", "", "", verdict=VANISHED, note="case missing from the current run")
            )
    return lines


def exit_code(lines: list[Line], allow_unjudged: bool = False) -> int:
    """1 for a regression or a failed check, and nothing else; 3 where a pair could not be judged:
    unstable with no recheck given, or in every recheck (unless the user accepts that); else 0."""
    if any(line.verdict in FAILING for line in lines):
        return 1
    if not allow_unjudged and any(line.verdict in (UNJUDGED, UNSTABLE) for line in lines):
        return EXIT_UNJUDGED
    return 0


def _f(value, spec=".3g") -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


SINGLE_RUN_NOTE = (
    "Note: the baseline holds a single run. Some timings are bimodal between processes (measured here: "
    "a page-fault-bound variant at 10 ms in some runs and 34-36 ms in others), so a one-run baseline can "
    "make an unchanged pair look regressed; record baselines from two or more runs (a folder: runs are "
    "pooled)."
)


def markdown(
    lines: list[Line], tolerance: float, baseline_runs: int = 2, allow_unjudged: bool = False
) -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    code = exit_code(lines, allow_unjudged)
    status = {0: "pass", 1: "FAIL", EXIT_UNJUDGED: "COULD NOT JUDGE (exit 3; --allow-unjudged passes it)"}[
        code
    ]
    head = [
        f"### Regression gate: {status}",
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
    points = sorted(
        {(line.case, line.size) for line in lines if line.verdict in (REGRESSED, UNSTABLE, UNJUDGED)}
    )
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
    allow_unjudged=False,
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
    text = markdown(lines, tolerance, baseline_runs=len(baseline.runs), allow_unjudged=allow_unjudged)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    if suspects_path:
        try:
            Path(suspects_path).write_text(suspects(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise load.ResultsError(
                f"{suspects_path}: cannot write --suspects ({exc.strerror or exc})"
            ) from None
    return exit_code(lines, allow_unjudged), text
