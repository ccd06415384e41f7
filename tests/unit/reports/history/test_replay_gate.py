"""The gate replayed on real runs (reports/history/replay_gate.py): a replay resamples a run's own
rounds, a mosaic takes each point whole from one real run, a planted slowdown scales one variant
only."""

from __future__ import annotations

import json

import numpy as np

from reports.history import replay_gate
from tests import paths

DOC = json.loads((paths.DATA / "distance_cpu_run1.json").read_text(encoding="utf-8"))


def test_a_replay_draws_each_point_from_its_own_rounds():
    again = replay_gate.replay(DOC, seed=1)
    assert len(again["benchmarks"]) == len(DOC["benchmarks"]) and again["datetime"] != DOC["datetime"]
    for old, new in zip(DOC["benchmarks"], again["benchmarks"]):
        data = old["stats"]["data"]
        if len(data) > 1:
            assert set(new["stats"]["data"]) <= set(data) and len(new["stats"]["data"]) == len(data)
            assert new["stats"]["median"] == float(np.median(new["stats"]["data"]))


def test_a_mosaic_of_one_run_is_that_run():
    mixed = replay_gate.mosaic([DOC, DOC], seed=3)
    assert [b["stats"]["data"] for b in mixed["benchmarks"]] == [
        b["stats"]["data"] for b in DOC["benchmarks"]
    ]


def test_a_planted_slowdown_scales_the_named_variant_only():
    bench = DOC["benchmarks"][0]
    case, variant = bench["extra_info"]["case"], bench["extra_info"]["variant"]
    slowed = replay_gate.plant(DOC, case, variant, 1.5)
    for old, new in zip(DOC["benchmarks"], slowed["benchmarks"]):
        info = old["extra_info"]
        if (info.get("case"), info.get("variant")) == (case, variant):
            np.testing.assert_allclose(new["stats"]["data"], np.asarray(old["stats"]["data"]) * 1.5)
            assert new["stats"]["median"] == float(np.median(new["stats"]["data"]))
        else:
            assert new["stats"] == old["stats"]
