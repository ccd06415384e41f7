"""The judging stage: two verdicts per ID (technique, notes), gains judged on paired rounds against
the machine's band, every finding counted the same way, errata apart."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd

from harness.contract import record, rules
from reports import build, load
from tests import synthetic

CASE = "x.case"
NAIVE_AND_FAST = (("naive_v", "naive", 4.0), ("fast_v", "optimized", 1.0))


def _declared(rule) -> dict:
    return {CASE: record.CaseInfo(id=CASE, tier=2, claim="fast_v is faster", rule=rule).to_data()}


def _report(tmp_path: Path, rule=rules.Faster(), schema=record.SCHEMA_VERSION, **kw):
    doc = synthetic.result(
        cases=(CASE,),
        variants=kw.pop("variants", NAIVE_AND_FAST),
        schema_version=schema,
        cases_info=_declared(rule),
        **kw,
    )
    judged = build.tables(load.from_documents([("run.json", doc)]))
    summary, verdicts = _as_written(judged.summary), _as_written(judged.verdicts).set_index("case")
    return summary, verdicts.loc[CASE]


def _as_written(table: pd.DataFrame) -> pd.DataFrame:
    """`table` as its CSV reads back (what a user of the report sees): the report's tables without
    drawing its plots, which is most of a build's time (build.tables)."""
    return pd.read_csv(io.StringIO(table.to_csv(index=False)), keep_default_na=False)


def _check(verdict, evidence="observed it", errata=()):
    return {
        "case": CASE,
        "kind": "check",
        "check": f"c_{verdict}",
        "device": "cpu",
        "nodeid": f"x::c_{verdict}",
        "outcome": "passed",
        "finding": record.Finding(
            record.Verdict(verdict) if verdict else None, evidence, tuple(errata)
        ).to_data(),
    }


def test_a_paired_gain_beyond_the_band_holds(tmp_path):
    summary, judged = _report(tmp_path, paired=True)
    rule_rows = summary[summary["against"] == "rule"]
    assert rule_rows["paired"].astype(str).eq("True").all() and set(rule_rows["gain"]) == {"faster"}
    assert judged["technique_verdict"] == "holds" and judged["notes_verdict"] == "correct"


def test_no_measurable_difference_fails_a_claimed_gain_but_cannot_be_judged_on_a_busy_machine(tmp_path):
    same = (("naive_v", "naive", 1.0), ("fast_v", "optimized", 1.0))
    summary, judged = _report(tmp_path, paired=True, variants=same, n_rounds=200)
    assert set(summary.loc[summary["against"] == "rule", "gain"]) == {"no measurable difference"}
    assert judged["technique_verdict"] == "fails"
    summary, judged = _report(
        tmp_path, paired=True, variants=same, n_rounds=200, busy="a spinner got 50% of its core"
    )
    assert judged["technique_verdict"] == "could not judge"
    assert "machine busy" in judged["technique_evidence"]
    assert "machine busy" in summary.loc[summary["against"] == "rule", "quality"].iloc[0]


def test_a_clear_gain_timed_on_a_busy_machine_still_counts(tmp_path):
    """4× faster holds quiet and busy alike: load only widens an interval, so one that still clears
    the band is a finding (CATALOG.md: "a gain whose interval clears the band on a busy machine
    still counts"); the evidence says the machine was busy."""
    _, quiet = _report(tmp_path, paired=True)
    summary, busy = _report(tmp_path, paired=True, busy="a spinner got 50% of its core")
    assert quiet["technique_verdict"] == "holds"
    assert busy["technique_verdict"] == "holds"
    assert "busy" in busy["technique_evidence"] and "clears the band" in busy["technique_evidence"]
    assert set(summary.loc[summary["against"] == "rule", "gain"]) == {"faster"}  # the numbers stay


def test_bitwise_identical_sides_of_a_premised_claim_depend_on_the_premise(tmp_path):
    rule = rules.Faster(premise="a reduced-precision fp32 kernel")
    _, judged = _report(tmp_path, rule=rule, paired=True, identical=True)
    assert judged["technique_verdict"] == "depends"
    assert "a reduced-precision fp32 kernel" in judged["technique_evidence"]
    _, judged = _report(tmp_path, rule=rule, paired=True, identical=False)
    assert judged["technique_verdict"] == "holds"


def test_errata_are_listed_and_never_decide_the_technique(tmp_path):
    erratum = record.Erratum(record.ErratumKind.REMOVED_API, "torch.one_hot", "AttributeError in 2.13")
    _, judged = _report(tmp_path, paired=True, outcomes=[_check("holds", errata=[erratum])])
    assert judged["technique_verdict"] == "holds"
    assert judged["notes_verdict"] == "1 erratum" and judged["errata_count"] == 1
    assert "removed API: torch.one_hot" in judged["errata"]


def test_every_finding_is_a_part_of_the_claim_in_every_id(tmp_path):
    """A check that finds the technique failing makes it fail beside a gain that holds (schema 3);
    a file written before errata had their own place is judged by its rule alone, as then."""
    _, judged = _report(tmp_path, paired=True, outcomes=[_check("fails")])
    assert judged["technique_verdict"] == "fails"
    _, judged = _report(tmp_path, paired=True, outcomes=[_check("depends")])
    assert judged["technique_verdict"] == "depends"
    _, judged = _report(tmp_path, paired=True, outcomes=[_check(None, errata=[])])
    assert judged["technique_verdict"] == "holds", "a finding with no verdict decides nothing"
    _, judged = _report(tmp_path, schema=2, outcomes=[_check("fails")])
    assert judged["technique_verdict"] == "holds"


def test_where_a_gain_turns_with_size_is_said(tmp_path):
    """fast_v's advantage shrinks to nothing at the largest size: the evidence names the sizes."""
    doc = synthetic.result(
        cases=(CASE,), variants=NAIVE_AND_FAST, paired=True, sizes=(128, 256), n_rounds=200
    )
    for pair in doc["pairs"]:
        if pair["size_label"] == "n256":
            pair["fast_s"] = pair["slow_s"]  # no difference at n=256
    doc["suite"]["schema_version"] = record.SCHEMA_VERSION
    doc["cases"] = _declared(rules.Faster())
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
    summary, quiet = _report(tmp_path, rule=reversed_rule, paired=True)
    row = summary[summary["against"] == "rule"].iloc[0]
    assert (row["fast"], row["slow"], str(row["paired"])) == ("naive_v", "fast_v", "True")
    assert abs(float(row["speedup"]) - 0.25) < 0.05 and quiet["technique_verdict"] == "fails"
    _, busy = _report(tmp_path, rule=reversed_rule, paired=True, busy="a spinner got 50% of its core")
    assert busy["technique_verdict"] == "could not judge"
    assert "machine busy" in busy["technique_evidence"]


def test_a_file_without_pairs_is_judged_on_rounds_taken_apart_and_says_so(tmp_path):
    summary, judged = _report(tmp_path, paired=False)
    assert "unpaired" in summary.loc[summary["against"] == "rule", "quality"].iloc[0]
    assert judged["technique_verdict"] == "holds"


def test_an_id_absent_from_a_machine_says_why():
    from harness.contract.record import CaseInfo
    from reports.verdicts import absent_reason

    cuda_only = CaseInfo(id="misc.memory_stats", tier=3, devices=("cuda",))
    assert absent_reason(cuda_only, ("cpu",)) == "runs only on cuda; this machine measured cpu"
    assert absent_reason(cuda_only, ("cpu", "cuda")) == "not in these results"
    assert absent_reason(CaseInfo(id="x", tier=3), ("cpu",)) == "not in these results"  # older file
    assert absent_reason(CaseInfo(id="x", tier=3, declared=False), ("cpu",)) == "no case yet"


def _advice_row(fast, slow, speedup, lo, hi, gain, against="rule", memory=1.0, x=512, identical=False):
    return dict(
        fast=fast,
        slow=slow,
        speedup=speedup,
        ci_low=lo,
        ci_high=hi,
        gain=gain,
        against=against,
        part="",
        x=x,
        x_name="s",
        device="cpu",
        dtype="float32",
        size_label=f"s{x}",
        memory_ratio=memory,
        quality="",
        identical=identical,
    )


def test_what_to_use_names_the_fastest_way_of_the_claim_and_never_a_context_pair():
    import pandas as pd

    from reports.html import recommendation

    row = _advice_row
    rows = pd.DataFrame(
        [
            row("sdpa_math", "masked_fill", 0.946, 0.934, 0.957, "too noisy to tell"),
            row("sdpa", "masked_fill", 2.08, 2.05, 2.11, "faster", memory=5.9),
        ]
    )
    use, gain, memory, _, where = recommendation(rows)
    assert use.startswith("sdpa (2.08× faster") and gain.startswith("2.08×") and memory == "5.9× less"
    assert "measured over s512" in where
    # A pair the catalogue adds for context is never advice.
    assert recommendation(rows.assign(against="context")) is None
    slower = pd.DataFrame([row("loader", "data_iter", 0.625, 0.6, 0.65, "slower", memory=0.5)])
    use, gain, memory, _, _ = recommendation(slower)
    assert use.startswith("data_iter (1.6× faster") and gain.startswith("1.6× [1.54, 1.67]")
    assert memory == "2× less"
    busy = pd.DataFrame(
        [{**row("sdpa", "masked_fill", 1.04, 0.9, 1.2, "too noisy to tell"), "quality": "machine busy (x)"}]
    )
    use, _, _, sure, _ = recommendation(busy)
    assert use.startswith("no advice") and "busy" in use and sure == "machine busy (x)"


def test_advice_names_the_sizes_and_where_the_winner_flips():
    import pandas as pd

    from reports.html import recommendation

    rows = pd.DataFrame(
        [
            _advice_row("zero_insertion", "conv_t", 1.3, 1.2, 1.4, "faster", x=16),
            _advice_row("zero_insertion", "conv_t", 0.7, 0.65, 0.75, "slower", x=64),
        ]
    )
    use, _, _, _, where = recommendation(rows)
    assert use.startswith("conv_t") and "s16 … s64 (2 sizes)" in where and "slower from s=64" in where


def test_a_memory_trade_is_advised_in_memory_saved_and_time_paid():
    import pandas as pd

    from harness.contract import record, rules
    from reports.html import recommendation

    claims = (record.Claim("saves", "q", "004", record.ClaimKind.MEMORY),)
    rule = rules.Lighter(light="checkpointed", heavy="plain", claim="saves")
    rows = pd.DataFrame([_advice_row("checkpointed", "plain", 0.55, 0.5, 0.6, "slower", memory=1 / 1.9)])
    use, *_ = recommendation(rows, rule, claims)
    assert use.startswith("checkpointed where memory is short: 1.9× less peak memory than plain")
    assert "at 1.82× the time" in use and "faster" not in use
    # The same rows under a speed claim name the faster side.
    speed = (record.Claim("saves", "q", "004", record.ClaimKind.SPEED),)
    fast_rule = rules.Faster(fast="checkpointed", slow="plain", claim="saves")
    assert recommendation(rows, fast_rule, speed)[0].startswith("plain (1.82× faster")


def test_two_sides_that_ran_one_computation_are_never_advice():
    import pandas as pd

    from harness.contract import rules
    from reports.html import recommendation

    rule = rules.Faster(
        fast="matmul.medium", slow="matmul.highest", premise="a reduced-precision fp32 kernel"
    )
    rows = pd.DataFrame(
        [_advice_row("matmul.medium", "matmul.highest", 1.11, 1.09, 1.12, "faster", identical=True)]
    )
    use, *_ = recommendation(rows, rule)
    assert use.startswith("no advice") and "ran one computation" in use
    assert recommendation(rows.assign(identical=False), rule)[0].startswith("matmul.medium (1.11× faster")


def test_a_pair_timed_apart_is_as_busy_as_the_run_its_probed_pairs_saw(tmp_path):
    """The library row is timed apart (no probe of its own): flagged busy when the run's probed pair
    was, and not when the run was quiet."""
    quiet, _ = _report(tmp_path, paired=True, variants=synthetic.VARIANTS)
    busy, _ = _report(
        tmp_path, paired=True, variants=synthetic.VARIANTS, busy="a spinner got 50% of its core"
    )
    apart = lambda table: table.loc[table["against"] == "library", "quality"].iloc[0]  # noqa: E731
    assert "unpaired" in apart(quiet) and "busy" not in apart(quiet)
    assert "machine busy during this run" in apart(busy) and "probed pairs" in apart(busy)


def test_the_faulted_pages_figures_are_shown_and_decide_nothing():
    """The second allocator state (harness.measure.faulted_pages) is reported beside each side and
    its ratio, but verdicts and claims are the settled pair's alone: faulted figures that turn the
    gain round (the naive way 10× faster) change no verdict, no claim, no summary column before them."""
    doc = synthetic.result(
        cases=(CASE,), variants=NAIVE_AND_FAST, cases_info=_declared(rules.Faster()), paired=True
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
        cases=(CASE,), variants=NAIVE_AND_FAST, cases_info=_declared(rules.Faster()), paired=True
    )
    for bench in doc["benchmarks"]:
        naive = bench["extra_info"]["variant"] == "naive_v"
        busy = "other processes took 60% of this process's cores" if naive else ""
        bench["extra_info"]["faulted_pages"] = {"median_s": 1e-3, "iqr_s": 1e-5, "busy": busy}
    table = build.tables(load.from_documents([("run.json", doc)])).summary
    row = table[table["against"] == "rule"].iloc[0]
    assert row.fast_faulted_s == 1e-3 and math.isnan(row.slow_faulted_s) and math.isnan(row.faulted_speedup)
    assert row.faulted_busy == "other processes took 60% of this process's cores"
