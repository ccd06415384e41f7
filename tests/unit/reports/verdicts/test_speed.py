"""A timed pair judged (reports/verdicts/speed.py): a gain beyond the machine's band on paired
rounds holds, no measurable difference fails a claimed gain, a busy machine decides nothing short of
a clear gain, a premise absent where both sides ran one computation, where the answer turns with size."""

from __future__ import annotations

import io

import pandas as pd

from harness.contract import record, rules
from reports import build, load
from tests import synthetic
from tests.judged_report import CASE, NAIVE_AND_FAST, declared, report


def test_a_paired_gain_beyond_the_band_holds(tmp_path):
    summary, judged = report(tmp_path, paired=True)
    rule_rows = summary[summary["against"] == "rule"]
    assert rule_rows["paired"].astype(str).eq("True").all() and set(rule_rows["gain"]) == {"faster"}
    assert judged["technique_verdict"] == "holds" and judged["notes_verdict"] == "correct"


def test_no_measurable_difference_fails_a_claimed_gain_but_cannot_be_judged_on_a_busy_machine(tmp_path):
    same = (("naive_v", "naive", 1.0), ("fast_v", "optimized", 1.0))
    summary, judged = report(tmp_path, paired=True, variants=same, n_rounds=200)
    assert set(summary.loc[summary["against"] == "rule", "gain"]) == {"no measurable difference"}
    assert judged["technique_verdict"] == "fails"
    summary, judged = report(
        tmp_path, paired=True, variants=same, n_rounds=200, busy="a spinner got 50% of its core"
    )
    assert judged["technique_verdict"] == "could not judge"
    assert "machine busy" in judged["technique_evidence"]
    assert "machine busy" in summary.loc[summary["against"] == "rule", "quality"].iloc[0]


def test_a_clear_gain_timed_on_a_busy_machine_still_counts(tmp_path):
    """4× faster holds quiet and busy alike: load only widens an interval, so one that still clears
    the band is a finding (CATALOG.md: "a gain whose interval clears the band on a busy machine
    still counts"); the evidence says the machine was busy."""
    _, quiet = report(tmp_path, paired=True)
    summary, busy = report(tmp_path, paired=True, busy="a spinner got 50% of its core")
    assert quiet["technique_verdict"] == "holds"
    assert busy["technique_verdict"] == "holds"
    assert "busy" in busy["technique_evidence"] and "clears the band" in busy["technique_evidence"]
    assert set(summary.loc[summary["against"] == "rule", "gain"]) == {"faster"}  # the numbers stay


def test_bitwise_identical_sides_of_a_premised_claim_depend_on_the_premise(tmp_path):
    rule = rules.Faster(premise="a reduced-precision fp32 kernel")
    _, judged = report(tmp_path, rule=rule, paired=True, identical=True)
    assert judged["technique_verdict"] == "depends"
    assert "a reduced-precision fp32 kernel" in judged["technique_evidence"]
    _, judged = report(tmp_path, rule=rule, paired=True, identical=False)
    assert judged["technique_verdict"] == "holds"


def test_where_a_gain_turns_with_size_is_said(tmp_path):
    """fast_v's advantage shrinks to nothing at the largest size: the evidence names the sizes."""
    doc = synthetic.result(
        cases=(CASE,),
        variants=NAIVE_AND_FAST,
        paired=True,
        sizes=(128, 256),
        n_rounds=200,
        schema_version=record.SCHEMA_VERSION,
        cases_info=declared(rules.Faster()),
    )
    for pair in doc["pairs"]:
        if pair["size_label"] == "n256":
            pair["fast_s"] = pair["slow_s"]  # no difference at n=256
    verdicts = build.tables(load.from_documents([("turns.json", doc)])).verdicts
    judged = pd.read_csv(io.StringIO(verdicts.to_csv(index=False))).set_index("case").loc[CASE]
    assert judged["technique_verdict"] == "fails"
    assert (
        "turns with size: faster at n=128, no measurable difference at n=256" in judged["technique_evidence"]
    )


def test_a_rule_naming_the_pair_the_other_way_reads_the_same_paired_rounds(tmp_path):
    """A rule claiming the naive way is faster reads the pair timed side by side, reversed: quiet,
    it fails (4× slower); busy, it cannot be judged (a slower side may be the neighbours'), never a
    verdict the rounds cannot support, and never `depends`: noise is not a condition."""
    reversed_rule = rules.Faster(fast="naive_v", slow="fast_v")
    summary, quiet = report(tmp_path, rule=reversed_rule, paired=True)
    row = summary[summary["against"] == "rule"].iloc[0]
    assert (row["fast"], row["slow"], str(row["paired"])) == ("naive_v", "fast_v", "True")
    assert abs(float(row["speedup"]) - 0.25) < 0.05 and quiet["technique_verdict"] == "fails"
    _, busy = report(tmp_path, rule=reversed_rule, paired=True, busy="a spinner got 50% of its core")
    assert busy["technique_verdict"] == "could not judge"
    assert "machine busy" in busy["technique_evidence"]


def test_a_file_without_pairs_is_judged_on_rounds_taken_apart_and_says_so(tmp_path):
    summary, judged = report(tmp_path, paired=False)
    assert "unpaired" in summary.loc[summary["against"] == "rule", "quality"].iloc[0]
    assert judged["technique_verdict"] == "holds"


def test_a_pair_timed_apart_is_as_busy_as_the_run_its_probed_pairs_saw(tmp_path):
    """The library row is timed apart (no probe of its own): flagged busy when the run's probed pair
    was, and not when the run was quiet."""
    quiet, _ = report(tmp_path, paired=True, variants=synthetic.VARIANTS)
    busy, _ = report(tmp_path, paired=True, variants=synthetic.VARIANTS, busy="a spinner got 50% of its core")
    apart = lambda table: table.loc[table["against"] == "library", "quality"].iloc[0]  # noqa: E731
    assert "unpaired" in apart(quiet) and "busy" not in apart(quiet)
    assert "machine busy during this run" in apart(busy) and "probed pairs" in apart(busy)
