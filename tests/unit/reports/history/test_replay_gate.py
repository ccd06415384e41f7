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


def test_the_suspects_expression_is_read_back_into_its_points():
    """What reports.gate.text.suspects writes for a re-run is what a replayed recheck keeps."""
    from reports.gate.lines import UNSTABLE, Line
    from reports.gate.text import suspects

    lines = [
        Line("distance.pairwise", "n256-m256-d256", "float32 cpu", "matmul ÷ broadcast", verdict=UNSTABLE),
        Line("onehot.encode", "", "float32 cpu", "scatter ÷ eye_index", verdict=UNSTABLE),
    ]
    assert replay_gate.suspect_points(suspects(lines)) == {
        ("distance.pairwise", "n256-m256-d256"),
        ("onehot.encode", ""),
    }
    assert replay_gate.suspect_points("") == set()


def test_a_recheck_keeps_only_the_suspects_points():
    info = DOC["benchmarks"][0]["extra_info"]
    point = (info["case"], info["size_label"])
    cut = replay_gate.cut_to(DOC, {point})
    assert cut["benchmarks"] and all(
        (b["extra_info"]["case"], b["extra_info"]["size_label"]) == point for b in cut["benchmarks"]
    )
    assert len(cut["benchmarks"]) < len(DOC["benchmarks"])
    assert all((p["case"], p["size_label"]) == point for p in cut.get("pairs") or [])
    assert replay_gate.cut_to(DOC, {(info["case"], "")})["benchmarks"] == [
        b for b in DOC["benchmarks"] if b["extra_info"]["case"] == info["case"]
    ]


def test_each_trial_holds_out_its_current_run_and_other_rechecks():
    trials = [replay_gate.held_out(t, 8, 2) for t in range(10)]
    assert [c for c, _ in trials] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
    assert all(c not in rc and len(set(rc)) == 2 for c, rc in trials)
    assert trials[0][1] != trials[8][1]  # the second pass re-measures with other runs
    assert replay_gate.held_out(3, 8, 0) == (3, [])


def test_a_point_left_out_is_gone_and_the_rest_kept():
    info = DOC["benchmarks"][0]["extra_info"]
    point = (info["case"], info["size_label"])
    rest = replay_gate.cut_to(DOC, {point}, keep=False)
    kept = replay_gate.cut_to(DOC, {point})
    assert len(rest["benchmarks"]) + len(kept["benchmarks"]) == len(DOC["benchmarks"])
    assert all((b["extra_info"]["case"], b["extra_info"]["size_label"]) != point for b in rest["benchmarks"])
