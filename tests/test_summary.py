"""reports.summary: one row per machine × case × size × dtype × device × timing mode × pair."""

from __future__ import annotations

import copy
import json

import numpy as np

from reports import load, summary
from tests import synthetic


def with_timing_modes(doc: dict, factors: dict[str, float]) -> dict:
    """`doc` as a `--timing-mode all` run writes it on a GPU: each point again per mode, the
    mode in extra_info, its times scaled by the mode's factor."""
    doc = copy.deepcopy(doc)
    extra = []
    for bench in doc["benchmarks"]:
        for mode, factor in factors.items():
            twin = copy.deepcopy(bench)
            twin["extra_info"]["timing_mode"] = mode
            twin["name"] = twin["fullname"] = bench["name"].replace("]", f"-{mode}]")
            twin["stats"]["data"] = [t * factor for t in twin["stats"]["data"]]
            for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
                if isinstance(twin["stats"].get(k), float):
                    twin["stats"][k] *= factor
            extra.append(twin)
    doc["benchmarks"] += extra
    return doc


def test_timing_mode_all_gives_one_row_per_mode_never_a_pooled_one(tmp_path):
    """The reports once dropped the mode from their keys: warm, cold-L2 and graph rounds of one
    variant became one sample (a median between the modes)."""
    doc = with_timing_modes(synthetic.result(devices=("cuda",), paired=True), {"cold_l2": 3.0, "graph": 0.5})
    path = tmp_path / "all.json"
    path.write_text(json.dumps(doc))
    results = load.load([path])
    assert set(results.rows["timing_mode"]) == {"warm", "cold_l2", "graph"}
    table = summary.build(results.rows, results.cases, results.pairs)
    per_point = table.groupby(["case", "size_label", "dtype", "device", "fast", "slow"]).size()
    assert (per_point == 3).all(), table[["size_label", "fast", "slow", "timing_mode"]]
    for mode, factor in {"warm": 1.0, "cold_l2": 3.0, "graph": 0.5}.items():
        rows = table[(table["timing_mode"] == mode) & (table["size_label"] == "n256")]
        warm = table[(table["timing_mode"] == "warm") & (table["size_label"] == "n256")]
        assert np.allclose(rows["fast_median_s"].to_numpy(), factor * warm["fast_median_s"].to_numpy())
    warm = table[table["timing_mode"] == "warm"]
    assert warm["paired"].any() and not table[table["timing_mode"] != "warm"]["paired"].any()
