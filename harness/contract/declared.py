"""The catalogue as the code declares it, in the results file's terms: each ID's `record.CaseInfo`
(its claim, tier, verdict rule resolved, devices), and the IDs nearest a selection that matched
nothing.

The cases are passed in (harness never imports `cases`): the glue hands over `cases.all_cases()`.
"""

from __future__ import annotations

import difflib

from harness.contract import catalogue, record, rules


def rule_of(case):
    """The verdict rule a case is judged by: its own, else what its findings say (a case without a
    rule times only the context pairs it declares, which decide nothing)."""
    return case.verdict or rules.FromFindings()


# The claim a case that declares none is judged as: its catalogue claim, as a whole.
WHOLE_CASE = "whole_case"


def as_one_claim(rule, words: str, source: str, *, findings_count: bool = True) -> tuple:
    """(rule, claim): a case that declares no claims as the one claim it is judged as, its
    catalogue `words` decided by its whole rule, with every check's finding beside it where
    `findings_count` (results written before version 3 mixed the notes' errata into their
    findings, so their rule alone decided: harness.contract.upgrade). An AllOf of one part reads
    as the part."""
    rule = rule if rule is not None else rules.FromFindings()
    findings = _reads_findings(rule)
    parts = (rule,) if findings or not findings_count else (rule, rules.FromFindings())
    speed, memory = list(rules.speed_rules(rule)), list(rules.memory_rules(rule))
    kinds = record.ClaimKind
    kind = kinds.SPEED if speed else kinds.MEMORY if memory else kinds.BEHAVIOUR
    claim = record.Claim(
        id=WHOLE_CASE,
        quote=words,
        file=source,
        kind=kind,
        reading="the case's claim as a whole, decided by its rule"
        + (" and every check's finding" if findings or len(parts) > 1 else ""),
    )
    return rules.AllOf(parts, claim=WHOLE_CASE), claim


def _reads_findings(rule) -> bool:
    if isinstance(rule, rules.FromFindings):
        return True
    return isinstance(rule, (rules.AllOf, rules.AnyOf)) and any(_reads_findings(r) for r in rule.rules)


def devices_of(case) -> tuple[str, ...]:
    """The device types a case has points on: its checks' and, where it times variants, its
    comparisons' (a device is listed once, in the order cpu, cuda)."""
    found = {d for check in case.checks.values() for d in check.devices}
    for comparison in (case, *case.parts.values()):
        if comparison.variants:
            found |= set(comparison.dtypes)
    return tuple(d for d in ("cpu", "cuda") if d in found) + tuple(sorted(found - {"cpu", "cuda"}))


def declares_cuda(case) -> bool:
    return any(c.dtypes.get("cuda") for c in case.comparisons().values()) or any(
        "cuda" in check.devices for check in case.checks.values()
    )


def timed_pairs(case) -> tuple[record.TimedPair, ...]:
    """The pairs `case` times side by side, per comparison part, as it declares them: the pairs its
    rule's nodes name and the part's context pairs (harness.contract.rules.compared_pairs). The
    plan times these, the results record them, and the summary and the gate read them from the
    results, so the three never work the pair out apart."""
    rule = rule_of(case)
    out = []
    for part, comparison in case.comparisons().items():
        roles = {name: v.role.value for name, v in comparison.variants.items()}
        for fast, slow, against in rules.compared_pairs(rule, roles, comparison.context_pairs):
            out.append(record.TimedPair(part, fast, slow, against))
    return tuple(out)


def case_infos(cases) -> dict[str, record.CaseInfo]:
    """Every catalogue ID with what `cases` declare for it; an ID no case declares is kept, marked
    undeclared, so a report lists it and says why it has no verdict."""
    entries = {e.id: e for e in catalogue.load()}
    out = {}
    for case in cases:
        entry = entries.get(case.id)
        rule, claims = rule_of(case), case.decided_claims()
        if not claims:
            rule, claim = as_one_claim(rule, case.claim or case.id, case.source)
            claims = (claim,)
        out[case.id] = record.CaseInfo(
            id=case.id,
            tier=case.tier,
            technique=entry.technique if entry else "",
            claim=case.claim,
            source=case.source,
            rule=rule,
            gate_tolerance=case.gate_tolerance,
            uncompilable={n: why for c in (case, *case.parts.values()) for n, why in c.uncompilable.items()},
            devices=devices_of(case),
            claims=claims,
            timed=timed_pairs(case),
        )
    for cid, entry in entries.items():
        out.setdefault(
            cid,
            record.CaseInfo(
                id=cid, tier=entry.tier, technique=entry.technique, source=entry.source, declared=False
            ),
        )
    return out


def nearest_ids(keyword: str) -> str:
    """The catalogue IDs nearest to the words of a -k expression that matched nothing."""
    ids = [e.id for e in catalogue.load()]
    words = [w for w in keyword.replace("(", " ").replace(")", " ").split() if w not in ("and", "or", "not")]
    near = dict.fromkeys(m for w in words for m in difflib.get_close_matches(w, ids, n=3, cutoff=0.5))
    if near:
        return "catalogue IDs like it: " + ", ".join(near)
    return "every node ID starts with its catalogue ID (cases/CATALOG.md), e.g. -k distance.pairwise"
