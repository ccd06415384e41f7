"""The cases' declarations in the results file's terms (harness/contract/declared.py): each case's
rule, devices and timed pairs, every catalogue ID kept (undeclared ones marked), the IDs nearest a
selection that matched nothing."""

from __future__ import annotations

from types import SimpleNamespace

from cases import all_cases, get_case
from harness.contract import catalogue, declared, record, rules


def test_a_case_without_a_rule_is_judged_by_its_findings_whatever_it_times():
    # No Faster() over the roles: a case without a rule times only its declared context pairs.
    timed = SimpleNamespace(verdict=None, variants={"loop": object()})
    untimed = SimpleNamespace(verdict=None, variants={})
    own = SimpleNamespace(verdict=rules.Lighter(), variants={"loop": object()})
    assert declared.rule_of(timed) == rules.FromFindings()
    assert declared.rule_of(untimed) == rules.FromFindings()
    assert declared.rule_of(own) == rules.Lighter()


def test_case_infos_keep_every_catalogue_id_and_the_declared_pairs():
    infos = declared.case_infos(all_cases())
    assert set(infos) >= {e.id for e in catalogue.load()}
    case = get_case("distance.pairwise")
    info = infos["distance.pairwise"]
    assert info.devices == declared.devices_of(case) and "cpu" in info.devices
    assert info.timed == declared.timed_pairs(case) and info.timed
    undeclared = declared.case_infos([])
    assert all(not i.declared for i in undeclared.values())


def test_a_keyword_that_matched_nothing_names_the_nearest_ids():
    assert "distance.pairwise" in declared.nearest_ids("distance.pairwse")
    assert "every node ID starts with its catalogue ID" in declared.nearest_ids("zzzz")


def test_a_case_without_claims_is_one_claim_its_findings_beside_its_rule_once():
    # A rule that does not read the findings gets them beside it, where they count...
    rule, claim = declared.as_one_claim(rules.Faster(), "x is faster", "001.md")
    assert rule == rules.AllOf((rules.Faster(), rules.FromFindings()), claim=declared.WHOLE_CASE)
    assert claim.id == declared.WHOLE_CASE and claim.kind == record.ClaimKind.SPEED and claim.file == "001.md"
    # ...and where they do not (results written before version 3), the rule alone decides.
    alone, _ = declared.as_one_claim(rules.Faster(), "x", "", findings_count=False)
    assert alone.rules == (rules.Faster(),)
    # A rule that already reads them, at any depth, never reads them twice.
    nested = rules.AllOf((rules.Lighter(), rules.AnyOf((rules.NotFaster(), rules.FromFindings()))))
    once, claim = declared.as_one_claim(nested, "x", "")
    assert once.rules == (nested,) and claim.kind == record.ClaimKind.SPEED
    findings, claim = declared.as_one_claim(None, "x", "")
    assert findings.rules == (rules.FromFindings(),) and claim.kind == record.ClaimKind.BEHAVIOUR
