"""What torch.compile of the naive way says beside the verdicts (findings, deciding nothing): how
much of the gap to the optimized way it closes, and the naive ways left uncompiled with why."""

from __future__ import annotations

import math

import pandas as pd

from harness.contract.record import WITHIN_CASE
from reports.verdicts.speed import largest_sizes, with_interval

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
    rule = summary[summary["against"].isin(["rule", "context", "library"])]
    lines = []
    for row in largest_sizes(compiled[compiled["fast"].str.startswith("compiled")]).itertuples():
        opt = rule[
            (rule["slow"] == row.slow)
            & (rule[list(WITHIN_CASE)] == [getattr(row, c) for c in WITHIN_CASE]).all(axis=1)
        ]
        where = f"{row.fast} vs {row.slow} at {row.size_label} {row.dtype} {row.device}: {with_interval(row)}"
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
