"""A timed pair judged: one pair at one size by the catalogue's gain policy (`speed_judgement`),
a speed rule over every size measured (`faster`, `not_faster`), and where the answer turns with size."""

from __future__ import annotations

import math

import pandas as pd

from harness.contract import gain, rules
from harness.contract.record import WITHIN_CASE
from reports.verdicts.judgement import (
    COULD_NOT_JUDGE,
    DEPENDS,
    FAILS,
    HOLDS,
    NOT_MEASURED,
    Judgement,
    combine,
)


def largest_sizes(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows at the largest size of each device × dtype × part (x first, then the size's order in the
    run): each part of a case is its own comparison, with sizes of its own."""
    if frame.empty:
        return frame
    frame = frame.assign(_order=range(len(frame)))
    if "part" not in frame:
        frame = frame.assign(part="")
    frame["part"] = frame["part"].fillna("")
    best = frame.sort_values(["x", "_order"]).groupby(["device", "dtype", "part"], sort=False).tail(1)
    keys = set(zip(*(best[c] for c in WITHIN_CASE)))
    mask = [k in keys for k in zip(*(frame[c] for c in WITHIN_CASE))]
    return frame[mask].drop(columns="_order")


def with_interval(row) -> str:
    if math.isnan(row.ci_low):
        return f"{row.speedup:.3g}× (too few rounds for a CI)"
    return f"{row.speedup:.3g}× [95% CI {row.ci_low:.3g}, {row.ci_high:.3g}]"


def _speed_rows(rule, summary: pd.DataFrame, roles: dict) -> pd.DataFrame:
    """The summary's rows (the pairs the run recorded, harness.contract.declared.timed_pairs) of the
    pairs a speed node names (a role in an old file's rule: its variants, harness.contract.rules)."""
    named = {(f, s) for f, s, _ in rules.named_pairs([(rule.fast, rule.slow)], roles, "rule")}
    mask = pd.Series(
        [pair in named for pair in zip(summary["fast"], summary["slow"])], index=summary.index, dtype=bool
    )
    return summary[mask]


def _flags(row, *prefixes: str) -> str:
    return "; ".join(q for q in str(getattr(row, "quality", "") or "").split("; ") if q.startswith(prefixes))


def _noisy(row) -> str:
    """Why a pair's band is wider than the catalogue's 5%, or "" where it is not."""
    return _flags(row, "machine busy", "noise floor")


def _busy(row) -> str:
    """The load probe's reason where a pair was timed on a busy machine, or "" where it was quiet."""
    return _flags(row, "machine busy")


def speed_judgement(row, premise: str = "", min_speedup: float = 1.0) -> Judgement:
    """One pair at one size, by the catalogue's policy (harness.contract.gain): faster only when the whole
    interval clears 1 + δ, on a quiet or a busy machine alike (load only widens an interval, so one
    that still clears the band is a finding); "no measurable difference" inside ±δ fails a claim
    of a gain, unless the band was widened by the machine's own noise. Noise is never a condition:
    anything else timed busy, an interval across an edge of the band, or a band widened by noise
    is `could not judge`, naming why, never a coin toss and never `depends`."""
    delta = float(getattr(row, "delta", gain.DELTA_FLOOR) or gain.DELTA_FLOOR)
    where = f"{row.fast} vs {row.slow} at {row.size_label} {row.dtype} {row.device}: {with_interval(row)}"
    band = f"±{delta:.0%}"
    verdict = (
        getattr(row, "gain", None) or gain.classify(gain.Ratio(row.speedup, row.ci_low, row.ci_high)).value
    )
    if premise and getattr(row, "identical", None) is True:
        return Judgement(
            DEPENDS,
            f"{where}: the two ways gave bitwise-identical results here, so they ran one computation: "
            f"the claim's premise ({premise}) is absent on this machine",
        )
    busy = _busy(row)
    if verdict == gain.Gain.FASTER.value and row.ci_low > min_speedup:
        return Judgement(
            HOLDS,
            f"{where}, faster beyond the {band} band"
            + (f" (timed on a {busy}; the interval clears the band all the same)" if busy else ""),
        )
    if busy:
        # Anything short of a clear gain, timed busy, is not a finding either way: a neighbour can
        # slow one side alone, and how much varies from run to run (three runs beside two CPU
        # burners gave three different answers for one pair). Left undecided, busy runs agree with
        # each other and contradict no quiet one.
        return Judgement(
            COULD_NOT_JUDGE,
            f"machine busy: {where} ({verdict}), timed on a {busy}; re-run on a quiet machine",
        )
    if verdict == gain.Gain.FASTER.value:
        return Judgement(COULD_NOT_JUDGE, f"{where}: faster, but not surely by the claimed {min_speedup:g}×")
    if verdict == gain.Gain.SLOWER.value:
        return Judgement(FAILS, f"{where}: slower, beyond the {band} band")
    if verdict == gain.Gain.SAME.value:
        noisy = _noisy(row)
        if noisy:
            return Judgement(
                COULD_NOT_JUDGE,
                f"{where}: no measurable difference within {band}, a band this wide because of {noisy}",
            )
        return Judgement(FAILS, f"{where}: no measurable difference (inside {band})")
    return Judgement(COULD_NOT_JUDGE, f"{where}: too noisy to tell (the interval crosses the {band} band)")


def where_it_turns(picked: pd.DataFrame) -> list[str]:
    """Per device × dtype × part × pair measured at several sizes: the sizes at which the answer
    changes ("faster from d=512; no measurable difference at d=64")."""
    lines = []
    if picked.empty or "gain" not in picked:
        return lines
    for (device, dtype, part, fast, slow), rows in picked.groupby(
        ["device", "dtype", "part", "fast", "slow"], sort=False, dropna=False
    ):
        rows = rows.sort_values("x", kind="stable")
        gains = list(rows["gain"])
        if len(gains) < 2 or len(set(gains)) < 2:
            continue
        x_name = rows["x_name"].iloc[0]
        steps = [f"{g} at {x_name}={x:g}" for g, x in zip(gains, rows["x"])]
        lines.append(
            f"{fast} vs {slow} ({dtype} {device}{' ' + part if part else ''}) turns with size: "
            + ", ".join(steps)
        )
    return lines


def faster(rule: rules.Faster, summary, rows, roles) -> Judgement:
    picked = _speed_rows(rule, summary, roles)
    if picked.empty:
        return Judgement(NOT_MEASURED, f"no timings of {rule.fast} and {rule.slow} together")
    parts = [
        speed_judgement(row, rule.premise, rule.min_speedup) for row in largest_sizes(picked).itertuples()
    ]
    judged = combine(parts)
    turns = where_it_turns(picked)
    return Judgement(judged.verdict, "; ".join([judged.evidence, *turns]))


def not_faster(rule: rules.NotFaster, summary, rows, roles) -> Judgement:
    """ "Not necessarily faster" holds where the gain does not show at some measured point (no
    measurable difference, or slower); fails where it is faster everywhere; a point too noisy to
    tell cannot settle it either way."""
    picked = _speed_rows(rule, summary, roles)
    if picked.empty:
        return Judgement(NOT_MEASURED, f"no timings of {rule.fast} and {rule.slow} together")
    judged = [(speed_judgement(row), row) for row in picked.itertuples()]
    not_faster_at = [
        (j, r) for j, r in judged if r.gain in (gain.Gain.SAME.value, gain.Gain.SLOWER.value) and not _busy(r)
    ]
    if not_faster_at:
        j, row = min(not_faster_at, key=lambda jr: jr[1].speedup)
        return Judgement(HOLDS, f"{rule.fast} not faster than {rule.slow}: {j.evidence}")
    if all(j.verdict == HOLDS for j, _ in judged):
        row = min((r for _, r in judged), key=lambda r: r.ci_low)
        return Judgement(
            FAILS,
            f"{rule.fast} faster than {rule.slow} everywhere measured; least at "
            f"{row.size_label} {row.dtype} {row.device}: {with_interval(row)}",
        )
    return Judgement(
        COULD_NOT_JUDGE, "; ".join(j.evidence for j, _ in judged if j.verdict == COULD_NOT_JUDGE)
    )
