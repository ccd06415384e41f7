"""Claims as the unit (CATALOG.md): each claim a case declares is decided by what names it, the
rule checks' findings, the variants' checks against their float64 truth, and the verdict rule's
nodes (a timed pair, a peak-memory ratio, a hedge). A `ClaimJudgement` per claim; the technique's
`Judgement` is computed from them: fails if any claim fails, holds only when every measured claim
holds, with how many were measured. What names no claim is context: reported, deciding nothing.

Nothing red reads holds: a variant outside its tolerance makes its claim fail (the check observed
the claim false); any other red test (a check's own precondition, a crash) leaves its claim
`could not judge`, naming the test; an ID with any red test is never `holds`, whatever the test.
A variant outside its tolerance has no timings (a fast wrong answer is not an optimization).
"""

from __future__ import annotations

import pandas as pd

from harness.contract import rules
from harness.contract.declared import WHOLE_CASE
from harness.contract.record import WITHIN_CASE
from reports.verdicts.judgement import (
    COULD_NOT_JUDGE,
    DEPENDS,
    FAILS,
    HOLDS,
    NOT_MEASURED,
    ClaimJudgement,
    Judgement,
    verdict_of_parts,
)
from reports.verdicts.outcomes import red_line, skip_reasons
from reports.verdicts.rule import evaluate, rule_of

WRONG_ANSWER = "WrongAnswer"  # harness.point.variant_benchmark's error: a variant outside its tolerance


def _check_parts(name: str, outcomes: pd.DataFrame) -> list[Judgement]:
    """A rule check's outcomes on each device: its finding, or why it decided nothing."""
    parts = []
    for r in outcomes[(outcomes["kind"] == "check") & (outcomes["name"] == name)].itertuples():
        if r.outcome == "failed":
            parts.append(Judgement(COULD_NOT_JUDGE, f"check {name} ({r.device}) went red: {r.reason[:300]}"))
        elif r.outcome == "skipped":
            parts.append(Judgement(NOT_MEASURED, f"check {name} ({r.device}) skipped: {r.reason}"))
        elif isinstance(r.verdict, str) and r.verdict:
            parts.append(Judgement(r.verdict, f"{name} ({r.device}): {r.evidence}"))
        else:
            parts.append(Judgement(NOT_MEASURED, f"check {name} ({r.device}) reported without a verdict"))
    return parts


def _variant_part(spec: str, outcomes: pd.DataFrame) -> list[Judgement]:
    """A variant's checks against its float64 truth, over every point it ran: outside its tolerance
    anywhere fails the claim; a crash leaves it undecided; within at every point holds."""
    part, _, name = spec.rpartition("/")
    mine = outcomes[(outcomes["kind"] == "variant") & (outcomes["name"] == name) & (outcomes["part"] == part)]
    if mine.empty:
        return []
    wrong = mine[(mine["outcome"] == "failed") & (mine["error_type"] == WRONG_ANSWER)]
    broke = mine[(mine["outcome"] == "failed") & (mine["error_type"] != WRONG_ANSWER)]
    ran = mine[mine["outcome"] == "passed"]
    if not wrong.empty:
        r = wrong.iloc[0]
        return [
            Judgement(
                FAILS,
                f"{spec} is wrong at {len(wrong)} points, e.g. {_at(r)}: {r['reason'][:300]}",
            )
        ]
    if not broke.empty:
        r = broke.iloc[0]
        return [
            Judgement(
                COULD_NOT_JUDGE,
                f"{spec} at {_at(r)} went red ({r['error_type']}): {r['reason'][:300]}",
            )
        ]
    if ran.empty:
        return [Judgement(NOT_MEASURED, f"{spec}: " + (skip_reasons(mine) or "not run"))]
    points = ran.drop_duplicates(list(WITHIN_CASE))
    where = ", ".join(dict.fromkeys(f"{d} {dev}" for d, dev in zip(points["dtype"], points["device"])))
    return [
        Judgement(
            HOLDS, f"{spec} equals its float64 truth within its bound at {len(points)} points ({where})"
        )
    ]


def _at(r) -> str:
    return " ".join(f"{r['size_label']} {r['dtype']} {r['device']}".split())


def _covers(node, pair_name: str, roles: dict) -> bool:
    """Whether a pair test ("fast/slow") is one of the pairs a claimed node's speed nodes name."""
    fast, _, slow = pair_name.partition("/")
    specs = [(r.fast, r.slow) for r in rules.speed_rules(node)]
    return (fast, slow) in {(f, s) for f, s, _ in rules.named_pairs(specs, roles, "rule")}


def _describe(node) -> str:
    if isinstance(node, (rules.AllOf, rules.AnyOf)):
        inner = " and " if isinstance(node, rules.AllOf) else " or "
        return "(" + inner.join(_describe(r) for r in node.rules) + ")"
    if isinstance(node, (rules.Faster, rules.NotFaster)):
        word = "faster than" if isinstance(node, rules.Faster) else "not necessarily faster than"
        return f"{node.fast} {word} {node.slow}"
    if isinstance(node, (rules.Lighter, rules.NotLighter)):
        word = "lighter than" if isinstance(node, rules.Lighter) else "not necessarily lighter than"
        return f"{node.light} {word} {node.heavy}"
    return type(node).__name__


def by_claims(case, rows, summary, outcomes, errors, errata) -> Judgement:
    """The technique from its claims (CATALOG.md, "Claims are the unit"; "Nothing red reads holds")."""
    outcomes = outcomes.assign(part=outcomes["part"].fillna("") if "part" in outcomes else "")
    roles = dict(zip(rows["variant"], rows["role"]))
    rule = rule_of(case)
    nodes: dict[str, list] = {}
    for node in rules.claimed(rule):
        nodes.setdefault(node.claim, []).append(node)
    pairs = outcomes[outcomes["kind"] == "pair"]
    judged, claimed_tests = [], set()
    for claim in getattr(case, "claims", ()):
        parts, by = [], []
        for name in claim.checks:
            parts += _check_parts(name, outcomes)
            claimed_tests.add(("check", "", name))
            by.append(f"check {name}")
        for spec in claim.variants:
            parts += _variant_part(spec, outcomes)
            part, _, name = spec.rpartition("/")
            claimed_tests.add(("variant", part, name))
            by.append(f"variant {spec}")
        for node in nodes.get(claim.id, ()):
            by.append(_describe(node))
            covered = pd.Series(
                [_covers(node, n, roles) for n in pairs["name"]], index=pairs.index, dtype=bool
            )
            red_pairs = pairs[(pairs["outcome"] == "failed") & covered]
            for r in red_pairs.itertuples():
                claimed_tests.add(("pair", r.part, r.name))
                parts.append(
                    Judgement(
                        COULD_NOT_JUDGE, f"pair {r.name} {r.size_label} {r.device} went red: {r.reason[:300]}"
                    )
                )
            parts.append(evaluate(node, summary, rows, outcomes, roles))
        verdict = verdict_of_parts(parts)
        shown = [p for p in parts if p.verdict == verdict] if verdict in (FAILS, COULD_NOT_JUDGE) else parts
        evidence = "; ".join(dict.fromkeys(p.evidence for p in shown if p.evidence))
        stand_in = getattr(claim, "stand_in", "")
        if stand_in and verdict == HOLDS:
            # Judged on something other than the notes' own object: it held there, which says the
            # technique can work, not that the notes' version does (CATALOG.md: "Quotes are the
            # notes' words").
            verdict, evidence = (
                DEPENDS,
                f"holds on a stand-in ({stand_in}), not on the notes' own: " + evidence,
            )
        if not parts:
            evidence = (
                f"not run on this machine ({'; '.join(by)}: no point here, e.g. one that needs a GPU)"
                if by
                else "no check, variant or timed pair of the suite decides it"
            )
        judged.append(ClaimJudgement(claim, verdict, "; ".join(by), evidence))
    return technique_of(judged, outcomes, claimed_tests, errors, errata)


def technique_of(judged: list[ClaimJudgement], outcomes, claimed_tests: set, errors, errata) -> Judgement:
    """The technique verdict from its claims: fails if any claim fails; could not judge if a claim
    could not be judged or a red test decided no claim (a context variant, a control); not
    measured when no claim was; holds only when every measured claim holds; else depends."""
    failed = outcomes[outcomes["outcome"] == "failed"]
    unclaimed = [
        red_line(r)
        for r in failed.itertuples()
        if (r.kind, r.part if r.kind != "check" else "", r.name) not in claimed_tests
    ]
    n = len(judged)
    measured = [c for c in judged if c.verdict != NOT_MEASURED]
    counted = f"{len(measured)} of {n} claims measured"
    verdicts = {c.verdict for c in judged}
    if FAILS in verdicts:
        verdict = FAILS
    elif COULD_NOT_JUDGE in verdicts or unclaimed:
        verdict = COULD_NOT_JUDGE
    elif not measured:
        verdict = NOT_MEASURED
    elif verdicts - {NOT_MEASURED} == {HOLDS}:
        verdict = HOLDS
    else:
        verdict = DEPENDS
    red = [f"red tests that decide no claim: {len(unclaimed)}, e.g. {unclaimed[0]}"] if unclaimed else []
    if [c.claim.id for c in judged] == [WHOLE_CASE]:
        # A case that declares no claims of its own (each case of a file written before claims
        # were the unit) is its one judgement: the technique reads it directly, and claims.csv,
        # which lists the notes' claims the suite tells apart, has no row for it. Where nothing of
        # it ran here, why not is the evidence.
        evidence = judged[0].evidence
        if verdict == NOT_MEASURED and not (outcomes["outcome"] == "passed").any():
            evidence = skip_reasons(outcomes) or "no results on this machine"
        return Judgement(verdict, "; ".join([evidence, *red]), errors, errata)
    # The claims that make the verdict what it is come first; the ones that hold are named only.
    lines = [f"{verdict} — {counted}"]
    for kind in [FAILS, COULD_NOT_JUDGE, DEPENDS, NOT_MEASURED]:
        lines += [f"{c.claim.id}: {kind}, {c.evidence}" for c in judged if c.verdict == kind]
    held = [c.claim.id for c in judged if c.verdict == HOLDS]
    if held:
        lines.append("holds: " + ", ".join(held))
    return Judgement(verdict, "; ".join(lines + red), errors, errata, tuple(judged))
