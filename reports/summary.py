"""summary.csv: per machine × case × size × dtype × device, the speedup of each fast variant over
each slow one (the pairs the case's rule names, and the optimized variants over the library's),
with a 95% bootstrap CI from the per-round timings, and the memory ratio.

Runs of one machine are pooled (their rounds concatenated); machines are never mixed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness import rules
from harness.record import compiled_source
from reports import stats

ROLES = ("naive", "optimized", "library", "compiled")

SUMMARY_COLUMNS = [
    "machine",
    "case",
    "tier",
    "part",
    "size_label",
    "x_name",
    "x",
    "dtype",
    "device",
    "fast",
    "slow",
    "against",
    "fast_rounds",
    "slow_rounds",
    "fast_median_s",
    "slow_median_s",
    "speedup",
    "ci_low",
    "ci_high",
    "fast_peak_bytes",
    "slow_peak_bytes",
    "memory_ratio",
    "verdict",
]


def speed_rules(rule):
    """The Faster/NotFaster rules inside a rule (AllOf nests them)."""
    if isinstance(rule, (rules.Faster, rules.NotFaster)):
        yield rule
    elif isinstance(rule, rules.AllOf):
        for inner in rule.rules:
            yield from speed_rules(inner)


def memory_rules(rule):
    """The Lighter rules inside a rule (AllOf nests them)."""
    if isinstance(rule, rules.Lighter):
        yield rule
    elif isinstance(rule, rules.AllOf):
        for inner in rule.rules:
            yield from memory_rules(inner)


def rule_pairs(case) -> list[tuple[str, str]]:
    """(fast, slow) names or roles the case's claim compares: its speed rules' pairs, else its
    memory rules' (light, heavy) pairs — a case whose variants are different models must not be
    paired across models — and by default optimized over naive."""
    rule = getattr(case, "verdict", None) if case is not None else None
    pairs = [(r.fast, r.slow) for r in speed_rules(rule)]
    pairs = pairs or [(r.light, r.heavy) for r in memory_rules(rule)]
    return pairs or [("optimized", "naive")]


def expand(spec: str, roles: dict[str, str]) -> list[str]:
    """A variant name, or a role meaning every variant with that role (in ``roles``: name → role)."""
    if spec in ROLES:
        return [name for name, role in roles.items() if role == spec]
    return [spec] if spec in roles else []


class Group:
    """The variants measured for one machine × case × size × dtype × device, rounds pooled."""

    def __init__(self, key: dict):
        self.key = key
        self.roles: dict[str, str] = {}
        self.data: dict[str, np.ndarray] = {}
        self.peak: dict[str, float] = {}

    def pairs(self, case) -> list[tuple[str, str, str]]:
        """(fast, slow, against) for the rule's pairs, then each fast variant over the library."""
        out: list[tuple[str, str, str]] = []
        specs = rule_pairs(case)
        if not any(expand(f, self.roles) and expand(s, self.roles) for f, s in specs):
            specs = [("optimized", "naive")]  # the rule names variants these results lack (renamed?)
        for fast_spec, slow_spec in specs:
            for fast in expand(fast_spec, self.roles):
                for slow in expand(slow_spec, self.roles):
                    if fast != slow and (fast, slow) not in [(f, s) for f, s, _ in out]:
                        out.append((fast, slow, "rule"))
        if not out:  # a case timing the notes' way against only the library's (no "optimized")
            out = [
                (lib, slow, "library")
                for lib in expand("library", self.roles)
                for slow in expand("naive", self.roles)
            ]
        for fast in {f for f, _, _ in out}:
            for lib in expand("library", self.roles):
                if lib != fast and (fast, lib) not in [(f, s) for f, s, _ in out]:
                    out.append((fast, lib, "library"))
        # torch.compile of the naive way: compiled vs naive, and the trick vs the compiled naive.
        naive = expand("naive", self.roles)
        for comp in expand("compiled", self.roles):
            source = compiled_source(comp, naive)
            if source is None:
                continue
            out.append((comp, source, "compiled"))
            for fast, slow, against in list(out):  # the notes' trick, or the library where there is none
                if against in ("rule", "library") and slow == source:
                    out.append((fast, comp, "compiled"))
        return out


KEYS = ["machine", "case", "size_label", "dtype", "device"]


def groups(rows: pd.DataFrame) -> list[Group]:
    """One `Group` per key; pandas finds the row indices of each (key, variant) in one pass."""
    if rows.empty:
        return []
    cols = {c: rows[c].to_numpy() for c in ("tier", "part", "x_name", "x", "role", "peak_bytes", "data")}
    out: dict[tuple, Group] = {}
    for (*key, variant), idx in rows.groupby(KEYS + ["variant"], sort=False).indices.items():
        key = tuple(key)
        group = out.get(key)
        if group is None:
            i = idx[0]
            group = out[key] = Group(
                {
                    **dict(zip(KEYS, key)),
                    "tier": cols["tier"][i],
                    "part": cols["part"][i],
                    "x_name": cols["x_name"][i],
                    "x": cols["x"][i],
                }
            )
        group.roles[variant] = cols["role"][idx[0]]
        group.data[variant] = (
            np.concatenate(list(cols["data"][idx])) if len(idx) > 1 else cols["data"][idx[0]]
        )
        group.peak[variant] = (
            float(np.nanmax(cols["peak_bytes"][idx]))
            if np.isfinite(cols["peak_bytes"][idx]).any()
            else float("nan")
        )
    return list(out.values())


def build(rows: pd.DataFrame, cases: dict) -> pd.DataFrame:
    """``cases``: machine → case ID → declaration (harness.record.CaseInfo), as each run recorded."""
    out = []
    for group in groups(rows):
        case = cases.get(group.key["machine"], {}).get(group.key["case"])
        for fast, slow, against in group.pairs(case):
            speedup, lo, hi = stats.ratio_of_medians(group.data[slow], group.data[fast])
            fp, sp = group.peak[fast], group.peak[slow]
            out.append(
                {
                    **group.key,
                    "fast": fast,
                    "slow": slow,
                    "against": against,
                    "fast_rounds": group.data[fast].size,
                    "slow_rounds": group.data[slow].size,
                    "fast_median_s": float(np.median(group.data[fast])),
                    "slow_median_s": float(np.median(group.data[slow])),
                    "speedup": speedup,
                    "ci_low": lo,
                    "ci_high": hi,
                    "fast_peak_bytes": fp,
                    "slow_peak_bytes": sp,
                    "memory_ratio": sp / fp if fp > 0 else math.nan,
                    "verdict": "",
                }
            )
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)
