"""Claims are the unit of a verdict, and nothing red reads holds (CATALOG.md): each claim a case
declares is decided by what names it, the technique from its claims; a red test fails its claim
(a variant outside its tolerance) or leaves it `could not judge`, and never lets the ID read holds.
Synthetic results files, judged by the real reports stages."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from harness.contract import record, rules
from harness.contract.record import Claim, ClaimKind
from reports import load, summary, verdicts
from tests import synthetic

CASE = "x.case"
NAIVE_AND_FAST = (("naive_v", "naive", 4.0), ("fast_v", "optimized", 1.0), ("lib_v", "library", 1.5))
CLAIMS = (
    Claim("same", "fast_v computes what naive_v does", "001", ClaimKind.CORRECTNESS, variants=("fast_v",)),
    Claim("faster", "naive_v is the terrible way", "001", ClaimKind.SPEED),
    Claim("raises", "the API raises on bad input", "004", ClaimKind.BEHAVIOUR, checks=("c_claimed",)),
)
RULE = rules.Faster("fast_v", "naive_v", claim="faster")


def _report(tmp_path: Path, outcomes=(), claims=CLAIMS, rule=RULE, **kw):
    info = record.CaseInfo(id=CASE, tier=2, claim="fast_v is faster", rule=rule, claims=claims)
    doc = synthetic.result(
        cases=(CASE,),
        variants=NAIVE_AND_FAST,
        schema_version=record.SCHEMA_VERSION,
        cases_info={CASE: info.to_data()},
        paired=True,
        outcomes=list(outcomes),
        **kw,
    )
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    # The judging stages as `reports build` runs them, without rendering plots.
    results = load.load([path])
    entries = verdicts.catalogue_of(results)
    judged = verdicts.judge_all(results, summary.build(results.rows, results.cases, results.pairs), entries)
    table = verdicts.verdicts_table(judged, entries).set_index("case")
    return table.loc[CASE], verdicts.claims_table(judged).set_index("claim")


def _check(name, verdict="holds", outcome="passed", error_type=""):
    data = {"case": CASE, "kind": "check", "check": name, "device": "cpu", "nodeid": f"x::{name}"}
    data["outcome"] = outcome
    if outcome == "passed":
        data["finding"] = record.Finding(record.Verdict(verdict), f"{name} observed it").to_data()
    else:
        data.update(reason=f"{name} broke", error_type=error_type)
    return data


def _red_variant(name, error_type="WrongAnswer"):
    return {
        "case": CASE,
        "kind": "variant",
        "variant": name,
        "device": "cpu",
        "size_label": "n512",
        "dtype": "float32",
        "nodeid": f"x::test_check[{CASE}-{name}-n512]",
        "outcome": "failed",
        "reason": f"{name}: outside tolerance",
        "error_type": error_type,
    }


def test_every_claim_gets_its_own_verdict_and_the_technique_counts_them(tmp_path):
    judged, claims = _report(tmp_path, [_check("c_claimed")])
    assert dict(claims["verdict"]) == {"same": "holds", "faster": "holds", "raises": "holds"}
    assert claims.loc["faster", "decided_by"] == "fast_v faster than naive_v"
    assert claims.loc["same", "decided_by"] == "variant fast_v"
    assert judged["technique_verdict"] == "holds" and judged["claims_measured"] == 3
    assert judged["technique_evidence"].startswith("holds — 3 of 3 claims measured")


def test_an_unmeasured_claim_is_said_and_the_rest_decide(tmp_path):
    judged, claims = _report(tmp_path)  # no outcome of the check c_claimed
    assert claims.loc["raises", "verdict"] == "not measured"
    assert judged["technique_verdict"] == "holds"
    assert "2 of 3 claims measured" in judged["technique_evidence"]
    assert "raises: not measured" in judged["technique_evidence"]


def test_a_variant_outside_its_tolerance_fails_its_claim_and_the_technique(tmp_path):
    judged, claims = _report(tmp_path, [_check("c_claimed"), _red_variant("fast_v")])
    assert claims.loc["same", "verdict"] == "fails"
    assert "outside tolerance" in claims.loc["same", "evidence"]
    assert judged["technique_verdict"] == "fails" and judged["claims_failing"] == 1


def test_a_red_check_leaves_its_claim_undecided_and_the_id_never_holds(tmp_path):
    judged, claims = _report(tmp_path, [_check("c_claimed", outcome="failed", error_type="AssertionError")])
    assert claims.loc["raises", "verdict"] == "could not judge"
    assert "c_claimed (cpu) went red" in claims.loc["raises", "evidence"]
    assert judged["technique_verdict"] == "could not judge" and judged["failed_tests"] == 1


def test_a_red_test_that_decides_no_claim_still_keeps_the_id_from_holds(tmp_path):
    """A library way (context) that crashes decides no claim, yet the ID does not read holds."""
    judged, claims = _report(tmp_path, [_check("c_claimed"), _red_variant("lib_v", "RuntimeError")])
    assert set(claims["verdict"]) == {"holds"}
    assert judged["technique_verdict"] == "could not judge"
    assert "red tests that decide no claim: 1" in judged["technique_evidence"]


def test_a_context_check_decides_nothing(tmp_path):
    judged, _ = _report(tmp_path, [_check("c_claimed"), _check("c_context", "fails")])
    assert judged["technique_verdict"] == "holds"


def test_a_claimed_check_that_finds_the_claim_false_fails_it(tmp_path):
    judged, claims = _report(tmp_path, [_check("c_claimed", "fails")])
    assert claims.loc["raises", "verdict"] == "fails" and judged["technique_verdict"] == "fails"


def test_a_case_without_claims_is_judged_whole_and_a_red_test_keeps_it_from_holds(tmp_path):
    """A case that declares no claims (each case of a file written before claims) is judged as one
    claim, by its rule, and read as the technique's verdict: claims.csv, the notes' claims told
    apart, has no row for it."""
    judged, claims = _report(tmp_path, claims=(), rule=rules.Faster())
    assert claims.empty and judged["technique_verdict"] == "holds"
    assert judged["technique_evidence"].startswith("fast_v vs naive_v at ")
    assert pd.isna(judged["claims"])
    judged, claims = _report(
        tmp_path, [_red_variant("lib_v", "RuntimeError")], claims=(), rule=rules.Faster()
    )
    assert claims.empty and judged["technique_verdict"] == "could not judge"
    assert "red tests that decide no claim: 1" in judged["technique_evidence"]


def test_a_claim_judged_on_a_stand_in_never_reads_holds(tmp_path):
    """CATALOG.md: where a check judges a stand-in (another module, launcher or input range), the
    claim reads depends, naming it (parallel.manual_dp held on an MLP standing in for LeNet)."""
    stand_in = Claim(
        "raises",
        "the API raises on bad input",
        "004",
        ClaimKind.BEHAVIOUR,
        checks=("c_claimed",),
        stand_in="an MLP for the notes' LeNet",
    )
    claims = (*CLAIMS[:2], stand_in)
    technique, rows = _report(tmp_path, outcomes=[_check("c_claimed")], claims=claims)
    assert rows.loc["raises", "verdict"] == "depends"
    assert "stand-in (an MLP for the notes' LeNet)" in rows.loc["raises", "evidence"]
    # Failing on the stand-in still fails: nothing about a stand-in lifts a red finding.
    _, rows = _report(tmp_path, outcomes=[_check("c_claimed", verdict="fails")], claims=claims)
    assert rows.loc["raises", "verdict"] == "fails"
    assert Claim.from_data(stand_in.to_data()) == stand_in
