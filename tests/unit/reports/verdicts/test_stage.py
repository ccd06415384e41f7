"""The judging stage over every machine × ID (reports/verdicts/stage.py), as the report runs it:
the faulted-pages figures are shown beside the pair and decide nothing."""

from __future__ import annotations

import math

import pandas as pd

from harness.contract import rules
from reports import build, load
from tests import synthetic
from tests.judged_report import CASE, NAIVE_AND_FAST, declared


def test_the_faulted_pages_figures_are_shown_and_decide_nothing():
    """The second allocator state (harness.measure.faulted_pages) is reported beside each side and
    its ratio, but verdicts and claims are the settled pair's alone: faulted figures that turn the
    gain round (the naive way 10× faster) change no verdict, no claim, no summary column before them."""
    doc = synthetic.result(
        cases=(CASE,), variants=NAIVE_AND_FAST, cases_info=declared(rules.Faster()), paired=True
    )
    plain = build.tables(load.from_documents([("run.json", doc)]))
    for bench in doc["benchmarks"]:
        slow = bench["extra_info"]["variant"] == "naive_v"
        bench["extra_info"]["faulted_pages"] = {"median_s": 1e-3 if slow else 1e-2, "iqr_s": 1e-5}
    faulted = build.tables(load.from_documents([("run.json", doc)]))
    pd.testing.assert_frame_equal(plain.verdicts, faulted.verdicts)
    pd.testing.assert_frame_equal(plain.claims, faulted.claims)
    before = [c for c in plain.summary.columns if "faulted" not in c]
    pd.testing.assert_frame_equal(plain.summary[before], faulted.summary[before])
    row = faulted.summary[faulted.summary["against"] == "rule"].iloc[0]
    assert (row.fast_faulted_s, row.slow_faulted_s) == (1e-2, 1e-3) and abs(row.faulted_speedup - 0.1) < 1e-12
    assert plain.summary[["fast_faulted_s", "slow_faulted_s", "faulted_speedup"]].isna().all().all()


def test_a_faulted_figure_timed_on_a_busy_machine_is_left_out_with_the_reason():
    doc = synthetic.result(
        cases=(CASE,), variants=NAIVE_AND_FAST, cases_info=declared(rules.Faster()), paired=True
    )
    for bench in doc["benchmarks"]:
        naive = bench["extra_info"]["variant"] == "naive_v"
        busy = "other processes took 60% of this process's cores" if naive else ""
        bench["extra_info"]["faulted_pages"] = {"median_s": 1e-3, "iqr_s": 1e-5, "busy": busy}
    table = build.tables(load.from_documents([("run.json", doc)])).summary
    row = table[table["against"] == "rule"].iloc[0]
    assert row.fast_faulted_s == 1e-3 and math.isnan(row.slow_faulted_s) and math.isnan(row.faulted_speedup)
    assert row.faulted_busy == "other processes took 60% of this process's cores"


def test_every_machine_and_id_the_runs_mention_is_judged_an_unknown_id_said_so():
    from reports.verdicts.stage import catalogue_of, devices_measured, judge_all

    doc = synthetic.result(cases=(CASE, "zz.unknown"), variants=NAIVE_AND_FAST, paired=True)
    results = load.from_documents([("run.json", doc)])
    tables = build.tables(results)
    entries = catalogue_of(results)
    judged = judge_all(results, tables.summary, entries)
    machine = results.runs["machine"].iloc[0]
    assert set(judged) >= {(machine, CASE), (machine, "zz.unknown")}
    assert judged[(machine, "zz.unknown")].evidence.startswith("unknown case: ")
    assert devices_measured(results) == {machine: ("cpu",)}
