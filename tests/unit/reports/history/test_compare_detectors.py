"""Which change-point detector the history ships, chosen with numbers
(reports/history/compare_detectors.py): series built from the suite's own between-run noise, a
step injected at run 20, a step found only near where it was planted, and the table of docs/history.md."""

from __future__ import annotations

import json
import math

import numpy as np

from reports.history import compare_detectors as cd
from tests import paths

NOISE = json.loads((paths.DATA / "history" / "noise.json").read_text(encoding="utf-8"))


def test_residuals_are_centred_and_a_step_lowers_the_series_from_run_20():
    res = cd.residuals(NOISE)
    assert len(res) == len(NOISE["series"]) and all(abs(r.mean()) < 1e-12 for r in res)
    flat = cd.make_series(res, 50, seed=0, step=0.0)
    stepped = cd.make_series(res, 50, seed=0, step=0.2)
    for y, z in zip(flat, stepped):
        assert y.size == cd.LENGTH
        np.testing.assert_allclose(z[: cd.START], y[: cd.START])
        np.testing.assert_allclose(z[cd.START :] - y[cd.START :], math.log(0.8))


def test_a_step_is_found_only_where_it_was_planted_and_false_points_are_counted():
    def at(index):
        return lambda y, threshold: [index] if y.size > index else []

    y = np.zeros(cd.LENGTH)
    assert cd.found_after(at(cd.START), 0.0, y) == 1  # seen with the first run after the step
    assert cd.found_after(at(cd.START + 5), 0.0, y) is None  # too far from run 20: not this step
    assert cd.false_rate(at(3), 0.0, [y, y]) == 100.0  # one false change point per series


def test_the_table_has_a_row_per_detector_measured():
    files = sorted((paths.DATA / "history" / "detectors").glob("*.json"))
    rows = [r for f in files for r in json.loads(f.read_text(encoding="utf-8"))]
    table = cd.table(files)
    assert table.count("\n") == 2 + len(rows)
    for r in rows:
        assert f"| {cd.NAMES[r['detector']]} |" in table
