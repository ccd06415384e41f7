"""summary.csv: per machine × case × size × dtype × device, the speedup of each fast variant over
each slow one (the pairs the case's rule names, and the optimized variants over the library's),
with a 95% bootstrap CI from the per-round timings, and the memory ratio.

Runs of one machine are pooled (their rounds concatenated); machines are never mixed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cases import rules
from reports import stats

ROLES = ("naive", "optimized", "library")

SUMMARY_COLUMNS = [
    "machine", "case", "tier", "size_label", "x_name", "x", "dtype", "device", "fast", "slow",
    "against", "fast_rounds", "slow_rounds", "fast_median_s", "slow_median_s", "speedup",
    "ci_low", "ci_high", "fast_peak_bytes", "slow_peak_bytes", "memory_ratio", "verdict",
]


def speed_rules(rule):
    """The Faster/NotFaster rules inside a rule (AllOf nests them)."""
    if isinstance(rule, (rules.Faster, rules.NotFaster)):
        yield rule
    elif isinstance(rule, rules.AllOf):
        for inner in rule.rules:
            yield from speed_rules(inner)


def rule_pairs(case) -> list[tuple[str, str]]:
    """(fast, slow) names or roles the case's claim compares; default optimized over naive."""
    rule = getattr(case, "verdict", None) if case is not None else None
    pairs = [(r.fast, r.slow) for r in speed_rules(rule)]
    return pairs or [("optimized", "naive")]


def expand(spec: str, roles: dict[str, str]) -> list[str]:
    """A variant name, or a role meaning every variant with that role (in ``roles``: name → role)."""
    if spec in ROLES:
        return [name for name, role in roles.items() if role == spec]
    return [spec] if spec in roles else []


class Group:
    """The variants measured for one machine × case × size × dtype × device, rounds pooled."""

    def __init__(self, frame: pd.DataFrame):
        first = frame.iloc[0]
        self.key = {k: first[k] for k in ("machine", "case", "tier", "size_label", "x_name", "x", "dtype", "device")}
        self.roles, self.data, self.peak = {}, {}, {}
        for variant, part in frame.groupby("variant", sort=False):
            self.roles[variant] = part["role"].iloc[0]
            self.data[variant] = np.concatenate(list(part["data"]))
            self.peak[variant] = float(part["peak_bytes"].max())

    def pairs(self, case) -> list[tuple[str, str, str]]:
        """(fast, slow, against) for the rule's pairs, then each fast variant over the library."""
        out: list[tuple[str, str, str]] = []
        for fast_spec, slow_spec in rule_pairs(case):
            for fast in expand(fast_spec, self.roles):
                for slow in expand(slow_spec, self.roles):
                    if fast != slow and (fast, slow) not in [(f, s) for f, s, _ in out]:
                        out.append((fast, slow, "rule"))
        for fast in {f for f, _, _ in out}:
            for lib in expand("library", self.roles):
                if lib != fast and (fast, lib) not in [(f, s) for f, s, _ in out]:
                    out.append((fast, lib, "library"))
        return out


def groups(rows: pd.DataFrame) -> list[Group]:
    keys = ["machine", "case", "size_label", "dtype", "device"]
    return [Group(frame) for _, frame in rows.groupby(keys, sort=False)]


def build(rows: pd.DataFrame, known: dict) -> pd.DataFrame:
    out = []
    for group in groups(rows):
        case = known.get(group.key["case"])
        for fast, slow, against in group.pairs(case):
            speedup, lo, hi = stats.ratio_of_medians(group.data[slow], group.data[fast])
            fp, sp = group.peak[fast], group.peak[slow]
            out.append({
                **group.key, "fast": fast, "slow": slow, "against": against,
                "fast_rounds": group.data[fast].size, "slow_rounds": group.data[slow].size,
                "fast_median_s": float(np.median(group.data[fast])),
                "slow_median_s": float(np.median(group.data[slow])),
                "speedup": speedup, "ci_low": lo, "ci_high": hi, "fast_peak_bytes": fp,
                "slow_peak_bytes": sp, "memory_ratio": sp / fp if fp > 0 else math.nan, "verdict": "",
            })
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)
