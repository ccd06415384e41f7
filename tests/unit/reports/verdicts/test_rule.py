"""A case's recorded rule evaluated (reports/verdicts/rule.py): the findings read by the worst verdict
a passed check reached, the rule's nodes combined as the rule says, the rule a file without one is
judged by."""

from __future__ import annotations

import pandas as pd

from harness.contract import record, rules
from reports.verdicts.judgement import DEPENDS, FAILS, HOLDS, NOT_MEASURED
from reports.verdicts.rule import default_rule, evaluate, from_findings, reads_findings


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
    assert reads_findings(both) and not reads_findings(rules.AllOf(rules=(rules.Faster(),)))


def test_a_file_that_recorded_no_rule_is_judged_by_its_timings_else_its_findings():
    timed = pd.DataFrame([dict(variant="v")])
    assert default_rule(None, timed) == rules.Faster()
    assert default_rule(None, timed.iloc[:0]) == rules.FromFindings()
    recorded = rules.Lighter()
    assert default_rule(record.CaseInfo(id="x", tier=1, rule=recorded), timed) == recorded
