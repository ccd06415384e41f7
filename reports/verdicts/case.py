"""One catalogue ID on one machine judged (`judge`): by its claims, or, for files written before
claims (no ``claims`` in their cases), per case as they were then, by the rule and the findings; a
red test there also keeps the ID from `holds`."""

from __future__ import annotations

import pandas as pd

from harness.contract import rules
from reports.verdicts.claims import by_claims
from reports.verdicts.judgement import COULD_NOT_JUDGE, HOLDS, NOT_MEASURED, Judgement, all_of
from reports.verdicts.outcomes import errata_of, red_line, skip_reasons
from reports.verdicts.rule import default_rule, evaluate, from_findings, reads_findings


def judge(
    case, rows: pd.DataFrame, summary: pd.DataFrame, outcomes: pd.DataFrame, findings_count: bool = True
) -> Judgement:
    """The verdict for one case on one machine (all frames already filtered to both), with the
    failed tests and the notes' errata beside it. `findings_count`: every check's finding is a
    part of the claim beside the rule (results of schema 3 and later, whose findings keep the
    notes' errata apart); False for older files, judged by their rule alone as they were then
    (their findings mixed errata into the verdict)."""
    failed = outcomes[outcomes["outcome"] == "failed"]
    errors = tuple(red_line(r) for r in failed.itertuples())
    errata = errata_of(outcomes)
    if findings_count and getattr(case, "claims", ()):
        return by_claims(case, rows, summary, outcomes, errors, errata)
    if rows.empty and not (outcomes["outcome"] == "passed").any():
        why = "every test failed" if errors and not (outcomes["outcome"] == "skipped").any() else ""
        return Judgement(
            NOT_MEASURED, skip_reasons(outcomes) or why or "no results on this machine", errors, errata
        )
    roles = dict(zip(rows["variant"], rows["role"]))
    rule = default_rule(case, rows)
    judgement = evaluate(rule, summary, rows, outcomes, roles)
    if findings_count and not reads_findings(rule):
        # One policy for every ID: each check's finding on the technique counts beside the
        # timed claim, as a part of the claim (any part fails: fails), whatever the rule.
        found = from_findings(rules.FromFindings(), outcomes)
        if found.verdict != NOT_MEASURED:
            judgement = all_of([judgement, found]) if judgement.verdict != NOT_MEASURED else found
    if judgement.verdict == NOT_MEASURED and not judgement.evidence:
        return Judgement(NOT_MEASURED, skip_reasons(outcomes) or "no results on this machine", errors, errata)
    if errors and judgement.verdict == HOLDS:
        # Nothing red reads holds, in files judged per case too.
        return Judgement(
            COULD_NOT_JUDGE, f"{len(errors)} red tests: {errors[0]}; " + judgement.evidence, errors, errata
        )
    return Judgement(judgement.verdict, judgement.evidence, errors, errata)
