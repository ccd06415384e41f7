"""Evaluate a case's verdict rule (harness/rules.py) on one machine's results.

Each evaluation returns a `Judgement`: the verdict and one line of evidence with the numbers it
rests on, and, apart from it, the suite tests that went red on the machine (`errors`). A failed
test is an error of the run (a check's own truth violated, a variant outside its tolerance, a
crash), not a finding on the notes' claim: the verdict comes only from findings and timings, and
a variant outside its tolerance has no timings (a fast wrong answer is not an optimization).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from harness import rules
from harness.record import Verdict
from reports.summary import expand

HOLDS, FAILS, DEPENDS, NOT_MEASURED = (v.value for v in Verdict)


@dataclass(frozen=True)
class Judgement:
    verdict: str
    evidence: str
    errors: tuple[str, ...] = ()  # the failed suite tests, one line each with the message


def combine(parts: list[Judgement], joiner: str = "; ") -> Judgement:
    """All holds → holds, all fails → fails, a mix → depends; unmeasured parts are set aside."""
    measured = [p for p in parts if p.verdict != NOT_MEASURED]
    evidence = joiner.join(p.evidence for p in parts if p.evidence)
    if not measured:
        return Judgement(NOT_MEASURED, evidence)
    kinds = {p.verdict for p in measured}
    if kinds == {HOLDS}:
        return Judgement(HOLDS, evidence)
    if kinds == {FAILS}:
        return Judgement(FAILS, evidence)
    return Judgement(DEPENDS, evidence)


def all_of(parts: list[Judgement]) -> Judgement:
    """A claim made of several parts (rules.AllOf): fails when any measured part fails, holds when
    all hold, otherwise depends. `combine` is for one rule across devices, where a mix of holds and
    fails means the claim depends on the hardware."""
    measured = [p for p in parts if p.verdict != NOT_MEASURED]
    joined = combine(parts)
    if any(p.verdict == FAILS for p in measured):
        return Judgement(FAILS, joined.evidence)
    return joined


def _largest(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows at the largest size of each device × dtype × part (x first, then the size's order in the
    run): each part of a case is its own comparison, with sizes of its own."""
    if frame.empty:
        return frame
    frame = frame.assign(_order=range(len(frame)))
    if "part" not in frame:
        frame = frame.assign(part="")
    frame["part"] = frame["part"].fillna("")
    best = frame.sort_values(["x", "_order"]).groupby(["device", "dtype", "part"], sort=False).tail(1)
    keys = set(zip(best["device"], best["dtype"], best["size_label"]))
    mask = [k in keys for k in zip(frame["device"], frame["dtype"], frame["size_label"])]
    return frame[mask].drop(columns="_order")


def _ci(row) -> str:
    if math.isnan(row.ci_low):
        return f"{row.speedup:.3g}× (too few rounds for a CI)"
    return f"{row.speedup:.3g}× [95% CI {row.ci_low:.3g}, {row.ci_high:.3g}]"


def _speed_rows(rule, summary: pd.DataFrame, roles: dict) -> pd.DataFrame:
    fast, slow = set(expand(rule.fast, roles)), set(expand(rule.slow, roles))
    return summary[summary["fast"].isin(fast) & summary["slow"].isin(slow)]


def faster(rule: rules.Faster, summary, rows, roles) -> Judgement:
    picked = _speed_rows(rule, summary, roles)
    if picked.empty:
        return Judgement(NOT_MEASURED, f"no timings of {rule.fast} and {rule.slow} together")
    parts = []
    for row in _largest(picked).itertuples():
        where = f"{row.fast} vs {row.slow} at {row.size_label} {row.dtype} {row.device}: {_ci(row)}"
        if not math.isnan(row.ci_low) and row.ci_low > rule.min_speedup:
            parts.append(Judgement(HOLDS, where))
        elif not math.isnan(row.ci_high) and row.ci_high < 1:
            parts.append(Judgement(FAILS, where))
        else:
            parts.append(Judgement(DEPENDS, where))
    return combine(parts)


def not_faster(rule: rules.NotFaster, summary, rows, roles) -> Judgement:
    picked = _speed_rows(rule, summary, roles)
    if picked.empty:
        return Judgement(NOT_MEASURED, f"no timings of {rule.fast} and {rule.slow} together")
    not_faster_at = picked[~(picked["ci_low"] > 1)]
    # itertuples, not iloc: a Series row's `.dtype` is the Series' own dtype, not the column.
    if not not_faster_at.empty:
        row = next(not_faster_at.sort_values("speedup").itertuples())
        return Judgement(
            HOLDS,
            f"{row.fast} not faster than {row.slow} at {row.size_label} {row.dtype} {row.device}: {_ci(row)}",
        )
    row = next(picked.sort_values("ci_low").itertuples())
    return Judgement(
        FAILS,
        f"{rule.fast} faster than {rule.slow} everywhere measured; least at "
        f"{row.size_label} {row.dtype} {row.device}: {_ci(row)}",
    )


def _peak_pairs(light_spec: str, heavy_spec: str, rows: pd.DataFrame, roles: dict, largest_only: bool):
    """(ratio heavy/light, evidence) for each light × heavy variant pair measured together, at the
    largest such size of each device × dtype, or at every size."""
    light, heavy = expand(light_spec, roles), expand(heavy_spec, roles)
    picked = rows[rows["variant"].isin(light + heavy) & rows["peak_bytes"].notna()]
    peaks = (
        picked.groupby(["device", "dtype", "size_label", "variant"], sort=False)
        .agg(peak=("peak_bytes", "max"), x=("x", "first"))
        .reset_index()
    )
    for (device, dtype), part in peaks.groupby(["device", "dtype"], sort=False):
        both = [
            s
            for s in part["size_label"].unique()
            if set(part[part.size_label == s].variant) & set(light)
            and set(part[part.size_label == s].variant) & set(heavy)
        ]
        if not both:
            continue
        part = part[part.size_label.isin(both)]
        sizes = list(dict.fromkeys(part.sort_values("x", kind="stable")["size_label"]))
        for size in sizes[-1:] if largest_only else sizes:
            at = part[part.size_label == size].set_index("variant")["peak"]
            for lv in light:
                for hv in heavy:
                    if lv in at and hv in at:
                        ratio = at[hv] / at[lv] if at[lv] > 0 else math.inf
                        yield (
                            ratio,
                            (
                                f"peak {hv} {at[hv] / 2**20:.4g} MiB vs {lv} {at[lv] / 2**20:.4g} MiB "
                                f"({ratio:.3g}×) at {size} {dtype} {device}"
                            ),
                        )


def lighter(rule: rules.Lighter, summary, rows, roles) -> Judgement:
    parts = [
        Judgement(HOLDS if ratio > rule.min_ratio else FAILS, where)
        for ratio, where in _peak_pairs(rule.light, rule.heavy, rows, roles, largest_only=True)
    ]
    if not parts:
        return Judgement(NOT_MEASURED, f"no peak memory of {rule.light} and {rule.heavy} together")
    return combine(parts)


def not_lighter(rule: rules.NotLighter, summary, rows, roles) -> Judgement:
    pairs = list(_peak_pairs(rule.light, rule.heavy, rows, roles, largest_only=False))
    if not pairs:
        return Judgement(NOT_MEASURED, f"no peak memory of {rule.light} and {rule.heavy} together")
    not_lighter_at = [(ratio, where) for ratio, where in pairs if ratio <= 1]
    if not_lighter_at:
        return Judgement(HOLDS, f"{rule.light} not smaller: " + min(not_lighter_at)[1])
    return Judgement(
        FAILS, f"{rule.light} smaller than {rule.heavy} everywhere measured; least: " + min(pairs)[1]
    )


def from_findings(rule, outcomes: pd.DataFrame) -> Judgement:
    found = outcomes[
        (outcomes["kind"] == "check") & outcomes["verdict"].notna() & (outcomes["outcome"] == "passed")
    ]
    if found.empty:
        return Judgement(NOT_MEASURED, "no check reached a verdict")
    verdicts = set(found["verdict"])
    lines = [f"{r.name} ({r.device}): {r.verdict}: {r.evidence}" for r in found.itertuples()]
    for kind in (FAILS, DEPENDS, HOLDS):
        if kind in verdicts:
            return Judgement(kind, "; ".join(lines))
    return Judgement(NOT_MEASURED, "; ".join(lines))


def evaluate(rule, summary, rows, outcomes, roles) -> Judgement:
    if isinstance(rule, rules.Faster):
        return faster(rule, summary, rows, roles)
    if isinstance(rule, rules.NotFaster):
        return not_faster(rule, summary, rows, roles)
    if isinstance(rule, rules.Lighter):
        return lighter(rule, summary, rows, roles)
    if isinstance(rule, rules.FromFindings):
        return from_findings(rule, outcomes)
    if isinstance(rule, rules.NotLighter):
        return not_lighter(rule, summary, rows, roles)
    if isinstance(rule, rules.AllOf):
        return all_of([evaluate(r, summary, rows, outcomes, roles) for r in rule.rules])
    return Judgement(NOT_MEASURED, f"unknown rule {type(rule).__name__}")


def default_rule(case, rows: pd.DataFrame):
    """The rule the run recorded for the case; for a file that recorded none (schema 1), Faster()
    where variants were timed, else the findings."""
    if case is not None and case.verdict is not None:
        return case.verdict
    return rules.Faster() if not rows.empty else rules.FromFindings()


def skip_reasons(outcomes: pd.DataFrame) -> str:
    reasons = outcomes.loc[outcomes["outcome"] == "skipped", "reason"].dropna()
    reasons = [r for r in dict.fromkeys(reasons) if r]
    return "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else "")


def judge(case, rows: pd.DataFrame, summary: pd.DataFrame, outcomes: pd.DataFrame) -> Judgement:
    """The verdict for one case on one machine (all frames already filtered to both), with the
    failed tests beside it."""
    failed = outcomes[outcomes["outcome"] == "failed"]
    errors = tuple(
        " ".join(f"{r.name or r.kind} {r.size_label} {r.dtype} {r.device}".split())
        + f" failed: {r.reason[:300]}"
        for r in failed.itertuples()
    )
    if rows.empty and not (outcomes["outcome"] == "passed").any():
        why = "every test failed" if errors and not (outcomes["outcome"] == "skipped").any() else ""
        return Judgement(NOT_MEASURED, skip_reasons(outcomes) or why or "no results on this machine", errors)
    roles = dict(zip(rows["variant"], rows["role"]))
    judgement = evaluate(default_rule(case, rows), summary, rows, outcomes, roles)
    if judgement.verdict == NOT_MEASURED and not judgement.evidence:
        return Judgement(NOT_MEASURED, skip_reasons(outcomes) or "no results on this machine", errors)
    return Judgement(judgement.verdict, judgement.evidence, errors)


CLOSE_ENOUGH = 1.10  # compiled within 10% of the optimized way's time: the gap is closed
PART = 0.10  # less than a tenth of the speedup (in log terms): it does not close the gap


def not_compiled(case, summary: pd.DataFrame) -> list[str]:
    """The naive ways a case timed that were not compiled, each with the reason its declaration
    recorded (file I/O, processes talking to each other)."""
    reasons = dict(getattr(case, "uncompilable", None) or {})
    timed = set(summary["slow"]) if not summary.empty else set()
    return [f"not compiled: {name}: {reason}" for name, reason in reasons.items() if name in timed]


def compile_findings(summary: pd.DataFrame) -> list[str]:
    """Per compiled variant, at the largest size of each device × dtype: does torch.compile of the
    naive way close the gap to the optimized way? Closed when the compiled naive way is within
    10% of the optimized time; otherwise the share of the speedup it reaches, in log terms,
    log(t_naive / t_compiled) / log(t_naive / t_optimized): on a 300× gap a 77× compiled speedup
    is 76% of the way, where a share of time saved (99%) would hide the 4× still left."""
    compiled = summary[summary["against"] == "compiled"]
    rule = summary[summary["against"].isin(["rule", "library"])]
    lines = []
    for row in _largest(compiled[compiled["fast"].str.startswith("compiled")]).itertuples():
        opt = rule[
            (rule["slow"] == row.slow)
            & (rule["size_label"] == row.size_label)
            & (rule["dtype"] == row.dtype)
            & (rule["device"] == row.device)
        ]
        where = f"{row.fast} vs {row.slow} at {row.size_label} {row.dtype} {row.device}: {_ci(row)}"
        if opt.empty:
            lines.append(f"{where}; no optimized variant timed beside it")
            continue
        best = opt.sort_values("speedup").iloc[-1]
        t_naive, t_opt, t_comp = row.slow_median_s, best["fast_median_s"], row.fast_median_s
        faster = t_comp / t_opt
        versus = f"{best['fast']} {best['speedup']:.3g}× over {row.slow}, {faster:.3g}× faster than compiled"
        if not t_opt < t_naive:
            lines.append(f"no gap to close ({best['fast']} {best['speedup']:.3g}× over {row.slow}); {where}")
            continue
        if t_comp <= CLOSE_ENOUGH * t_opt:
            verdict = "torch.compile closes the gap"
        else:
            share = math.log(t_naive / t_comp) / math.log(t_naive / t_opt)
            verdict = (
                f"torch.compile closes part of it ({share:.0%})"
                if share >= PART
                else f"torch.compile does not close it ({max(share, 0.0):.0%})"
            )
        lines.append(f"{verdict}: {where}; {versus}")
    return lines
