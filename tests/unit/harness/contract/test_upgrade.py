"""Older results documents read in the current schema (harness/contract/upgrade.py): each version's
gaps filled as the suite then worked them out, a current document passed through untouched, a
version this reader does not know refused."""

from __future__ import annotations

import copy

import pytest

from harness.contract import catalogue, declared, record, rules, upgrade
from harness.contract.claims import RecordError
from tests import synthetic

VARIANTS = (("loop", "naive", 4.0), ("fused", "optimized", 1.0), ("cdist", "library", 2.0))


def _doc(schema=None, cases_info=None, outcomes=()):
    return synthetic.result(
        cases=("distance.pairwise",),
        variants=VARIANTS,
        schema_version=schema,
        cases_info=cases_info,
        outcomes=list(outcomes),
    )


def test_a_current_document_is_passed_through_and_an_unknown_version_refused():
    doc = _doc(
        record.SCHEMA_VERSION, {"distance.pairwise": record.CaseInfo("distance.pairwise", 1).to_data()}
    )
    assert upgrade.to_current(doc) is doc
    for bad in (0, "2", True, record.SCHEMA_VERSION + 1):
        doc["suite"]["schema_version"] = bad
        with pytest.raises(RecordError, match="schema version"):
            upgrade.to_current(doc)
    doc["suite"]["schema_version"] = record.SCHEMA_VERSION
    doc["cases"]["distance.pairwise"] = []
    with pytest.raises(RecordError, match="'cases' is not an object of case objects"):
        upgrade.to_current(doc)
    doc["cases"]["distance.pairwise"] = {"id": "distance.pairwise", "rule": {"rule": "Faster", "speedup": 2}}
    doc["suite"]["schema_version"] = 3
    with pytest.raises(RecordError, match=r"^cases\[distance.pairwise\]\.rule: .*speedup"):
        upgrade.to_current(doc)


def test_version_1_records_the_shipped_catalogue_with_the_rule_each_case_was_judged_by():
    doc = _doc(outcomes=[{"case": "layout.contiguous", "kind": "check", "check": "c", "outcome": "passed"}])
    before = copy.deepcopy(doc)
    up = upgrade.to_current(doc)
    assert doc == before  # the input is not changed
    assert up["suite"]["schema_version"] == record.SCHEMA_VERSION and up["suite"]["upgraded_from"] == 1
    run = record.read_run(up)
    # The catalogue it ran against: the shipped one, every ID (those it has no results for are
    # listed as not in these results).
    assert sorted(run.cases) == sorted(e.id for e in catalogue.load())
    listed = run.cases["conv.im2col"]  # no result for it: listed, nothing declared
    assert listed.rule is None and listed.claims == () and listed.timed == () and listed.tier == 2
    assert upgrade.to_current(up) is up  # read once: an upgraded document is current
    timed, checked = run.cases["distance.pairwise"], run.cases["layout.contiguous"]
    # Timed variants were judged by Faster(), the rest by their findings; each case is one claim.
    assert timed.rule == rules.AllOf((rules.Faster(),), claim=declared.WHOLE_CASE)
    assert checked.rule == rules.AllOf((rules.FromFindings(),), claim=declared.WHOLE_CASE)
    assert [c.id for c in timed.claims] == [declared.WHOLE_CASE]
    # The pairs as timed then: the optimized way over the naive one.
    assert timed.timed_in("") == [("fused", "loop", "rule")]


def test_findings_count_beside_the_rule_from_version_3_only():
    info = {"distance.pairwise": record.CaseInfo("distance.pairwise", 1, rule=rules.Faster()).to_data()}
    two = record.read_run(upgrade.to_current(_doc(2, info))).cases["distance.pairwise"]
    three = record.read_run(upgrade.to_current(_doc(3, info))).cases["distance.pairwise"]
    assert two.rule.rules == (rules.Faster(),)
    assert three.rule.rules == (rules.Faster(), rules.FromFindings())


def test_recorded_pairs_and_claims_are_kept():
    claim = record.Claim("fast", "broadcast is slow", "notes.md", record.ClaimKind.SPEED)
    info = record.CaseInfo(
        "distance.pairwise",
        1,
        rule=rules.Faster("cdist", "loop", claim="fast"),
        claims=(claim,),
        timed=(record.TimedPair("", "cdist", "loop"),),
    )
    run = record.read_run(upgrade.to_current(_doc(3, {"distance.pairwise": info.to_data()})))
    assert run.cases["distance.pairwise"] == info


def test_timed_then_reads_the_rule_then_the_roles():
    roles = {"loop": "naive", "fused": "optimized", "cdist": "library"}
    assert upgrade.timed_then(rules.Faster(), roles) == [("fused", "loop", "rule")]
    assert upgrade.timed_then(rules.Lighter(light="cdist", heavy="loop"), roles) == [
        ("cdist", "loop", "rule")
    ]
    assert upgrade.timed_then(None, roles) == [("fused", "loop", "rule")]
    assert upgrade.timed_then(rules.FromFindings(), roles) == [("fused", "loop", "context")]
    assert upgrade.timed_then(rules.FromFindings(), {"loop": "naive", "cdist": "library"}) == [
        ("cdist", "loop", "context")
    ]
    assert upgrade.timed_then(rules.Faster(fast="x", slow="y"), {"loop": "naive"}) == []


def test_a_compiled_twin_is_named_by_the_naive_way_it_compiles():
    doc = _doc(
        3, {"distance.pairwise": record.CaseInfo("distance.pairwise", 1, rule=rules.Faster()).to_data()}
    )
    twin = copy.deepcopy(doc["benchmarks"][0])
    twin["extra_info"].update(variant="compiled", role="compiled")
    doc["benchmarks"].append(twin)
    before = copy.deepcopy(doc)
    up = upgrade.to_current(doc)
    assert up["benchmarks"][-1]["extra_info"]["compiled_from"] == "loop"
    assert doc == before  # what the upgrade writes is its own copy; the input is not changed


def test_a_version_4_file_written_before_pairs_were_recorded_gets_them_and_stays_version_4():
    info = record.CaseInfo("distance.pairwise", 1, rule=rules.Faster("fused", "loop")).to_data()
    del info["timed"]
    up = upgrade.to_current(_doc(record.SCHEMA_VERSION, {"distance.pairwise": info}))
    run = record.read_run(up)
    assert run.cases["distance.pairwise"].timed_in("") == [("fused", "loop", "rule")]
    assert run.info.upgraded_from is None and run.info.schema_version == record.SCHEMA_VERSION


def test_a_version_3_file_is_timed_as_its_rule_named_then():
    info = {"distance.pairwise": record.CaseInfo("distance.pairwise", 1, rule=rules.Faster()).to_data()}
    doc = synthetic.result(
        cases=("distance.pairwise",), variants=VARIANTS, schema_version=3, cases_info=info, paired=True
    )
    assert {(p["fast"], p["against"]) for p in doc["pairs"]} == {("fused", "rule"), ("cdist", "context")}
    up = upgrade.to_current(doc)
    assert record.read_run(up).cases["distance.pairwise"].timed_in("") == [("fused", "loop", "rule")]


def test_a_case_that_recorded_no_rule_was_judged_by_faster_where_timed():
    info = {"distance.pairwise": {"id": "distance.pairwise", "tier": 1, "rule": None}}
    case = record.read_run(upgrade.to_current(_doc(3, info))).cases["distance.pairwise"]
    assert case.rule == rules.AllOf((rules.Faster(), rules.FromFindings()), claim=declared.WHOLE_CASE)
    assert case.timed_in("") == [("fused", "loop", "rule")]


def test_version_1_names_its_outcomes_and_keeps_an_unknown_case_as_judged_then():
    from reports import build, load

    doc = synthetic.result(cases=("gone.case",), variants=VARIANTS, n_rounds=20)
    for o in doc["outcomes"]:
        o["name"] = o.pop("variant")
    up = upgrade.to_current(doc)
    assert all("name" not in o and o["variant"] for o in up["outcomes"])
    gone = record.read_run(up).cases["gone.case"]
    assert not gone.declared and gone.tier is None
    tables = build.tables(load.from_documents([("v1.json", doc)]))
    # Not one of the catalogue's, judged as it was then: Faster() on its timings.
    assert "gone.case" not in {e.id for e in tables.entries}
    (judged,) = [j for (m, c), j in tables.judged.items() if c == "gone.case"]
    assert judged.verdict == "holds" and judged.evidence.startswith("unknown case")
    assert {("fused", "loop")} <= set(zip(tables.summary["fast"], tables.summary["slow"]))
