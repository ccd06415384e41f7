"""A case's verdict rule (`harness.contract.rules`, as its run recorded it) evaluated on one
machine's tables: each kind of node by its judge, the rule checks' findings read as a part."""

from __future__ import annotations

import pandas as pd

from harness.contract import declared, rules
from reports.verdicts.judgement import (
    COULD_NOT_JUDGE,
    DEPENDS,
    FAILS,
    HOLDS,
    NOT_MEASURED,
    Judgement,
    all_of,
    any_of,
)
from reports.verdicts.memory import lighter, not_lighter
from reports.verdicts.speed import faster, not_faster


def from_findings(rule, outcomes: pd.DataFrame) -> Judgement:
    found = outcomes[
        (outcomes["kind"] == "check") & outcomes["verdict"].notna() & (outcomes["outcome"] == "passed")
    ]
    if found.empty:
        return Judgement(NOT_MEASURED, "no check reached a verdict")
    verdicts = set(found["verdict"])
    lines = [f"{r.name} ({r.device}): {r.verdict}: {r.evidence}" for r in found.itertuples()]
    for kind in (FAILS, COULD_NOT_JUDGE, DEPENDS, HOLDS):
        if kind in verdicts:
            return Judgement(kind, "; ".join(lines))
    return Judgement(NOT_MEASURED, "; ".join(lines))


def evaluate(rule, summary, rows, outcomes, roles) -> Judgement:
    if isinstance(rule, rules.Faster):
        return faster(rule, summary, rows, roles)
    if isinstance(rule, rules.NotFaster):
        return not_faster(rule, summary, rows, roles)
    if isinstance(rule, rules.Lighter):
        return lighter(rule, summary, rows, roles)
    if isinstance(rule, rules.FromFindings):
        return from_findings(rule, outcomes)
    if isinstance(rule, rules.NotLighter):
        return not_lighter(rule, summary, rows, roles)
    if isinstance(rule, rules.AllOf):
        return all_of([evaluate(r, summary, rows, outcomes, roles) for r in rule.rules])
    if isinstance(rule, rules.AnyOf):
        return any_of([evaluate(r, summary, rows, outcomes, roles) for r in rule.rules])
    return Judgement(NOT_MEASURED, f"unknown rule {type(rule).__name__}")


def rule_of(case):
    """The rule the run recorded for the case (harness.contract.declared.rule_of: a case without one
    is judged by its findings), and the findings' for an ID no run recorded."""
    return declared.rule_of(case) if case is not None else rules.FromFindings()
