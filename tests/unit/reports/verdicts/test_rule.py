"""A case's recorded rule evaluated (reports/verdicts/rule.py): the findings read by the worst verdict
a passed check reached, the rule's nodes combined as the rule says, a case without a rule judged by
its findings."""

from __future__ import annotations

import pandas as pd

from harness.contract import record, rules
from reports.verdicts.judgement import DEPENDS, FAILS, HOLDS, NOT_MEASURED
from reports.verdicts.rule import evaluate, from_findings, rule_of


def _found(*verdicts, outcome="passed") -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(kind="check", name=f"c{i}", device="cpu", outcome=outcome, verdict=v, evidence="seen")
            for i, v in enumerate(verdicts)
        ]
    )


def test_the_findings_read_as_the_worst_verdict_a_passed_check_reached():
    assert from_findings(rules.FromFindings(), _found(HOLDS, DEPENDS)).verdict == DEPENDS
    assert from_findings(rules.FromFindings(), _found(HOLDS, FAILS, DEPENDS)).verdict == FAILS
    judged = from_findings(rules.FromFindings(), _found(HOLDS, HOLDS))
    assert judged.verdict == HOLDS and judged.evidence == "c0 (cpu): holds: seen; c1 (cpu): holds: seen"
    assert from_findings(rules.FromFindings(), _found(FAILS, outcome="failed")).verdict == NOT_MEASURED


def test_the_rules_nodes_combine_as_the_rule_says():
    found = _found(HOLDS)
    empty = pd.DataFrame(columns=["fast", "slow"])
    no_rows = pd.DataFrame(columns=["variant", "peak_bytes"])
    both = rules.AllOf(rules=(rules.FromFindings(), rules.Faster()))
    assert evaluate(both, empty, no_rows, found, {}).verdict == HOLDS  # the unmeasured part set aside
    assert (
        evaluate(rules.AnyOf(rules=(rules.Faster(), rules.FromFindings())), empty, no_rows, found, {}).verdict
        == HOLDS
    )
    assert evaluate(object(), empty, no_rows, found, {}).evidence == "unknown rule object"


def test_a_case_without_a_rule_is_judged_by_its_findings():
    assert rule_of(None) == rules.FromFindings()
    assert rule_of(record.CaseInfo(id="x", tier=1)) == rules.FromFindings()
    recorded = rules.Lighter()
    assert rule_of(record.CaseInfo(id="x", tier=1, rule=recorded)) == recorded
