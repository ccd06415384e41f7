"""One ID on one machine (reports/verdicts/case.py): every finding a part of the claim; a file
written before errata had their own place judged by its rule alone, as then."""

from __future__ import annotations

from tests.judged_report import check, report


def test_every_finding_is_a_part_of_the_claim_in_every_id(tmp_path):
    """A check that finds the technique failing makes it fail beside a gain that holds (schema 3);
    a file written before errata had their own place is judged by its rule alone, as then."""
    _, judged = report(tmp_path, paired=True, outcomes=[check("fails")])
    assert judged["technique_verdict"] == "fails"
    _, judged = report(tmp_path, paired=True, outcomes=[check("depends")])
    assert judged["technique_verdict"] == "depends"
    _, judged = report(tmp_path, paired=True, outcomes=[check(None, errata=[])])
    assert judged["technique_verdict"] == "holds", "a finding with no verdict decides nothing"
    _, judged = report(tmp_path, schema=2, outcomes=[check("fails")])
    assert judged["technique_verdict"] == "holds"
