"""The PNG plots (reports/plots.py): a case's timings per variant, each GPU timing mode its own
line, and no roofline where no ceiling was measured."""

from __future__ import annotations

import pandas as pd

from reports import load, plots
from tests import paths


def _rows():
    return load.load([paths.DATA / "distance_cpu_run1.json"]).rows


def test_a_case_plot_is_a_png():
    rows = _rows()
    case = rows["case"].iloc[0]
    png = plots.case_plot(rows[rows["case"] == case], case)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000


def test_a_timing_mode_other_than_warm_is_its_own_line():
    rows = pd.DataFrame({"variant": ["loop", "loop"], "timing_mode": ["warm", "cold_l2"]})
    assert plots.by_timing_mode(rows)["variant"].tolist() == ["loop", "loop [cold_l2]"]
    warm = pd.DataFrame({"variant": ["loop"], "timing_mode": [None]})
    assert plots.by_timing_mode(warm)["variant"].tolist() == ["loop"]


def test_no_roofline_without_measured_ceilings():
    rows = _rows().assign(flops_ceiling=float("nan"), copy_ceiling=float("nan"))
    assert plots.roofline_plot(rows, "no ceilings") is None
