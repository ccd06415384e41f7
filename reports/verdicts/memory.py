"""Peak memory judged: a ratio of peaks by the gain policy (`memory_judgement`), and the memory
rules (`lighter`, `not_lighter`) over the variants' peaks measured together."""

from __future__ import annotations

import math

import pandas as pd

from harness.contract import gain, rules
from harness.contract.record import WITHIN_CASE
from reports.verdicts.judgement import FAILS, HOLDS, NOT_MEASURED, Judgement, combine


def _peak_pairs(light_spec: str, heavy_spec: str, rows: pd.DataFrame, roles: dict, largest_only: bool):
    """(ratio heavy/light, evidence) for each light × heavy variant pair measured together, at the
    largest such size of each device × dtype, or at every size."""
    light, heavy = rules.expand(light_spec, roles), rules.expand(heavy_spec, roles)
    picked = rows[rows["variant"].isin(light + heavy) & rows["peak_bytes"].notna()]
    peaks = (
        picked.groupby([*WITHIN_CASE, "variant"], sort=False)
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


def memory_judgement(
    ratio: float, where: str, min_ratio: float = 1.0, band: float = gain.DELTA_FLOOR
) -> Judgement:
    """A peak-memory ratio (heavy ÷ light) by the same policy as a speed-up (`gain.classify_count`):
    lighter only beyond the ±`band` band (and beyond the rule's own `min_ratio`); inside it, no
    measurable difference. A peak is counted, not sampled, so the band is the catalogue's floor
    the run recorded, not a noise floor."""
    answer = gain.classify_count(ratio, band)
    if answer is gain.Gain.FASTER and ratio > min_ratio:
        return Judgement(HOLDS, f"{where}: lighter beyond the ±{band:.0%} band")
    if answer is gain.Gain.SLOWER:
        return Judgement(FAILS, f"{where}: heavier")
    return Judgement(FAILS, f"{where}: no measurable difference in peak memory")


def _recorded_floor(rows: pd.DataFrame) -> float:
    if "delta_floor" in rows and rows["delta_floor"].notna().any():
        return float(rows["delta_floor"].max())
    return gain.DELTA_FLOOR


def lighter(rule: rules.Lighter, summary, rows, roles) -> Judgement:
    band = _recorded_floor(rows)
    parts = [
        memory_judgement(ratio, where, rule.min_ratio, band)
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
