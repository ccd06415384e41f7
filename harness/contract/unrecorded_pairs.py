"""The pairs of a results file written before runs recorded what they timed side by side
(``cases[id].timed``, absent from schema 1-3 files and from cases a schema-4 run timed nothing of):
read as the suite then worked them out, from the recorded rule and the variants' roles. The one
place the old inference lives; a run now records the pairs its cases declare
(harness.contract.declared.timed_pairs), and every reader reads those.
"""

from __future__ import annotations

from harness.contract import rules


def as_timed_then(rule, roles: dict[str, str]) -> list[tuple[str, str, str]]:
    """(fast, slow, against) as the suite timed them before pairs were declared: the pairs the
    rule's speed nodes name; where it has none, its memory nodes'; where those name no variant of
    `roles` (no rule, or one naming another part's variants), every optimized variant over every
    naive one (context where the rule decides by its findings); else the library over the naive
    way, as context. ``rule``: the case's recorded rule (None where the file recorded none);
    ``roles``: variant name → role of the variants measured together."""
    specs = [(r.fast, r.slow) for r in rules.speed_rules(rule)] or [
        (r.light, r.heavy) for r in rules.memory_rules(rule)
    ]
    kind = "context" if isinstance(rule, rules.FromFindings) else "rule"
    return (
        rules.named_pairs(specs, roles, "rule")
        or rules.named_pairs([("optimized", "naive")], roles, kind)
        or rules.named_pairs([("library", "naive")], roles, "context")
    )
