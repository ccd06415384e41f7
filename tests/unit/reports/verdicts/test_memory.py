"""Peak memory judged (reports/verdicts/memory.py): lighter only beyond the band and the rule's own
ratio, at the largest size measured with both sides; "not necessarily lighter" holds where the light
side is not smaller somewhere."""

from __future__ import annotations

import pandas as pd

from harness.contract import rules
from reports.verdicts.judgement import FAILS, HOLDS, NOT_MEASURED
from reports.verdicts.memory import lighter, memory_judgement, not_lighter

ROLES = {"plain": "naive", "saved": "optimized"}


def _peaks(*points) -> pd.DataFrame:
    """(size, x, plain's peak, saved's peak) → the variant rows of one device × dtype."""
    rows = [
        dict(variant=v, size_label=s, x=x, device="cpu", dtype="float32", peak_bytes=p)
        for s, x, plain, saved in points
        for v, p in (("plain", plain), ("saved", saved))
    ]
    return pd.DataFrame(rows)


def test_a_saving_beyond_the_band_at_the_largest_size_holds():
    rows = _peaks(("n1", 1, 100.0, 100.0), ("n2", 2, 400.0, 100.0))
    judged = lighter(rules.Lighter(), None, rows, ROLES)
    assert judged.verdict == HOLDS and "(4×) at n2 float32 cpu" in judged.evidence
    assert lighter(rules.Lighter(min_ratio=5.0), None, rows, ROLES).verdict == FAILS
    assert lighter(rules.Lighter(), None, rows.iloc[:0], ROLES).verdict == NOT_MEASURED


def test_the_band_is_the_floor_the_run_recorded():
    rows = _peaks(("n1", 1, 106.0, 100.0))
    assert lighter(rules.Lighter(), None, rows, ROLES).verdict == HOLDS
    assert lighter(rules.Lighter(), None, rows.assign(delta_floor=0.1), ROLES).verdict == FAILS
    assert memory_judgement(1 / 1.2, "x", band=0.1).evidence == "x: heavier"


def test_not_necessarily_lighter_holds_where_the_light_side_is_not_smaller_somewhere():
    rows = _peaks(("n1", 1, 100.0, 120.0), ("n2", 2, 400.0, 100.0))
    assert not_lighter(rules.NotLighter(), None, rows, ROLES).verdict == HOLDS
    smaller = _peaks(("n1", 1, 200.0, 100.0), ("n2", 2, 400.0, 100.0))
    judged = not_lighter(rules.NotLighter(), None, smaller, ROLES)
    assert judged.verdict == FAILS and "everywhere measured" in judged.evidence
