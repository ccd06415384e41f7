"""reports.summary: one row per machine × case × size × dtype × device × timing mode × pair."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reports import load, summary
from tests import synthetic
from tests.fake_device import FakeDevice


def test_timing_mode_all_gives_one_row_per_mode_never_a_pooled_one(tmp_path):
    """The reports once dropped the mode from their keys: warm, cold-L2 and graph rounds of one
    variant became one sample (a median between the modes)."""
    doc = synthetic.with_timing_modes(
        synthetic.result(devices=("cuda",), paired=True), {"cold_l2": 3.0, "graph": 0.5}
    )
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


def test_a_file_is_judged_with_the_delta_floor_it_recorded(tmp_path):
    """δ was not recorded in results files, so a changed floor would silently re-judge old ones."""
    from harness.contract import gain, record

    doc = synthetic.result(paired=True, schema_version=record.SCHEMA_VERSION)
    doc["suite"]["delta_floor"] = 0.5
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc))
    results = load.load([path])
    assert set(results.rows["delta_floor"]) == {0.5}
    table = summary.build(results.rows, results.cases, results.pairs)
    assert (table["delta"] >= 0.5).all()  # the synthetic 4x gains stay gains, judged at ±50%
    older = synthetic.result(paired=True)  # written before the floor was recorded: the floor then
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert set(load.load([tmp_path / "old.json"]).rows["delta_floor"]) == {gain.DELTA_FLOOR}
    for bad in (float("nan"), 1.5, -0.1, "wide"):
        doc["suite"]["delta_floor"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(load.ResultsError, match="suite.delta_floor"):
            load.load([path])


def test_the_memory_band_is_the_gain_policys():
    from reports import verdicts

    assert verdicts.memory_judgement(1.06, "x").verdict == verdicts.HOLDS
    assert verdicts.memory_judgement(1.06, "x", band=0.1).evidence.endswith(
        "no measurable difference in peak memory"
    )
    assert verdicts.memory_judgement(1 / 1.2, "x", band=0.1).evidence.endswith("heavier")
    assert verdicts.memory_judgement(3.0, "x", min_ratio=4.0).evidence.endswith(
        "no measurable difference in peak memory"
    )


def test_a_pairs_only_run_reports_its_pairs(tmp_path):
    """A run of `-k test_pair` times the pairs side by side and once reported none of them: a
    summary row needed both sides timed alone as well."""
    doc = synthetic.result(paired=True)
    doc["benchmarks"] = []
    path = tmp_path / "pairs_only.json"
    path.write_text(json.dumps(doc))
    results = load.load([path])
    table = summary.build(results.rows, results.cases, results.pairs)
    assert len(table) == len(doc["pairs"]) and table["paired"].all()
    assert (table["speedup"] > 1).all() and table["fast_median_s"].notna().all()


def test_the_reports_read_the_pairs_the_run_declared(tmp_path):
    """The plan times the pairs the case declares; the run records them; the summary reads them
    from the record rather than working them out again from the rule."""
    import plan
    from cases import all_cases
    from harness.contract import declared, record

    for case in all_cases():
        planned = {
            (p.part, p.fast, p.slow, p.against)
            for p in plan.pair_points("full", ("cpu", "cuda"))
            if p.case.id == case.id
        }
        declared_pairs = {(t.part, t.fast, t.slow, t.against) for t in declared.timed_pairs(case)}
        assert planned <= declared_pairs, case.id
        info = declared.case_infos([case])[case.id]
        assert record.CaseInfo.from_data(info.to_data()).timed == info.timed

    doc = synthetic.result(paired=True, schema_version=record.SCHEMA_VERSION)
    rule = {"rule": "Faster", "fast": "fast_v", "slow": "naive_v"}
    doc["cases"] = {
        "distance.pairwise": {
            "id": "distance.pairwise",
            "tier": 1,
            "rule": rule,
            "timed": [{"part": "", "fast": "lib_v", "slow": "naive_v", "against": "context"}],
        }
    }
    path = tmp_path / "declared.json"
    path.write_text(json.dumps(doc))
    results = load.load([path])
    table = summary.build(results.rows, results.cases, results.pairs)
    declared_rows = table[table["against"].isin(["rule", "context"])]
    # The recorded pair only: the rule's own pair, which this (hand-made) run did not record as
    # timed, is not worked out again from the rule.
    assert set(zip(declared_rows["fast"], declared_rows["slow"], declared_rows["against"])) == {
        ("lib_v", "naive_v", "context"),
    }
    # A recorded pair that the recorded rule names the other way round is read that way too.
    doc["cases"]["distance.pairwise"]["rule"] = {"rule": "Faster", "fast": "naive_v", "slow": "lib_v"}
    path.write_text(json.dumps(doc))
    results = load.load([path])
    table = summary.build(results.rows, results.cases, results.pairs)
    declared_rows = table[table["against"].isin(["rule", "context"])]
    assert set(zip(declared_rows["fast"], declared_rows["slow"], declared_rows["against"])) == {
        ("lib_v", "naive_v", "context"),
        ("naive_v", "lib_v", "rule"),
    }


def _fake_gpu_run(tmp_path, timed) -> load.Results:
    """A `-k test_pair` run on the fake CUDA device holding the one pair `timed`."""
    doc = synthetic.result(devices=("cuda",), paired=True)
    doc["benchmarks"], doc["pairs"] = [], [timed.to_data()]
    path = tmp_path / f"{timed.fast}-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(doc))
    return load.load([path])


def test_a_host_bound_fast_side_is_flagged_and_its_gpu_only_speedup_shown(tmp_path):
    """On the fake device with a 20 µs launch latency: the matmul's six small launches issued at
    the host's pace read ~75 µs a call in the rounds against 36 µs replayed from a graph, so the
    rounds' ~22x is the host's and the GPU's is 47x; a GPU-bound fast side is not flagged."""
    from harness.measure import device as harness_device
    from harness.point import pair_benchmark
    from tests import fake_gpu

    def timed(make):
        fake = FakeDevice(launch_latency=20e-6)
        with harness_device.installed(fake):
            return pair_benchmark.run(make(fake), cap_s=0.05, min_rounds=5, noise_floor=lambda: None)

    results = _fake_gpu_run(tmp_path, timed(fake_gpu.host_bound_pair))
    row = summary.build(results.rows, results.cases, results.pairs).iloc[0]
    assert row["speedup"] == pytest.approx(47 * 36 / 76, rel=0.05)
    assert row["graph_speedup"] == pytest.approx(47, rel=0.02)
    assert row["fast_graph_s"] == pytest.approx(36e-6, rel=0.02)
    assert row["host_bound"].startswith("host-bound: matmul ran at the host's pace")
    assert "not the GPU's (GPU-only: 47" in row["host_bound"] and row["host_bound"] in row["quality"]
    gpu_bound = _fake_gpu_run(tmp_path, timed(lambda fake: fake_gpu.pair(fake, 36e-6, 47 * 36e-6)))
    row = summary.build(gpu_bound.rows, gpu_bound.cases, gpu_bound.pairs).iloc[0]
    assert row["speedup"] == pytest.approx(47, rel=0.02) and row["graph_speedup"] == pytest.approx(
        47, rel=0.02
    )
    assert row["host_bound"] == "" and "host-bound" not in row["quality"]
