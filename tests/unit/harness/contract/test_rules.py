"""Verdict rules as data (harness/contract/rules.py): the speed, memory and claimed nodes found
through AllOf/AnyOf, a role expanded to its variants, and the pairs a comparison is timed as."""

from __future__ import annotations

from harness.contract import rules

ROLES = {"loop": "naive", "gather": "naive", "fused": "optimized", "cdist": "library"}


def test_nested_rules_are_found_through_all_of_and_any_of():
    fast = rules.Faster(fast="fused", slow="loop", claim="c1")
    light = rules.Lighter(claim="c2")
    rule = rules.AllOf((fast, rules.AnyOf((light, rules.NotFaster()))))
    assert list(rules.speed_rules(rule)) == [fast, rules.NotFaster()]
    assert list(rules.memory_rules(rule)) == [light]
    assert list(rules.claimed(rule)) == [fast, light]
    hedge = rules.AnyOf((fast, light), claim="either")
    assert list(rules.claimed(hedge)) == [hedge]  # a claimed hedge decides as a whole


def test_a_role_expands_to_its_variants_and_a_name_to_itself():
    assert rules.expand("naive", ROLES) == ["loop", "gather"]
    assert rules.expand("fused", ROLES) == ["fused"]
    assert rules.expand("missing", ROLES) == []


def test_compared_pairs_are_what_the_rule_and_the_context_name_and_never_guessed_from_roles():
    assert rules.compared_pairs(rules.Faster(fast="fused", slow="gather"), ROLES) == [
        ("fused", "gather", "rule")
    ]
    # A role in a rule expands to its variants.
    assert rules.compared_pairs(rules.Faster(fast="optimized", slow="naive"), ROLES) == [
        ("fused", "loop", "rule"),
        ("fused", "gather", "rule"),
    ]
    # Memory rules name pairs as the speed rules do, after them; a pair named twice is timed once.
    assert rules.compared_pairs(rules.Lighter(light="fused", heavy="loop"), ROLES) == [
        ("fused", "loop", "rule")
    ]
    both = rules.AllOf((rules.Lighter(light="cdist", heavy="loop"), rules.Faster(fast="fused", slow="loop")))
    assert rules.compared_pairs(both, ROLES) == [("fused", "loop", "rule"), ("cdist", "loop", "rule")]
    assert rules.compared_pairs(
        rules.AllOf((rules.Faster(fast="fused", slow="loop"), rules.Lighter(light="fused", heavy="loop"))),
        ROLES,
    ) == [("fused", "loop", "rule")]
    # A rule naming variants this comparison lacks, or one deciding by findings, names nothing
    # here; nothing is timed but the declared context (the optimized and library variants are not
    # paired with the naive ones by their roles).
    assert rules.compared_pairs(rules.Faster(fast="x", slow="y"), ROLES) == []
    assert rules.compared_pairs(rules.FromFindings(), ROLES) == []
    assert rules.compared_pairs(None, ROLES) == []
    assert rules.compared_pairs(rules.FromFindings(), ROLES, context=[("cdist", "loop")]) == [
        ("cdist", "loop", "context")
    ]
    assert rules.compared_pairs(rules.FromFindings(), ROLES, context=[("library", "naive")]) == [
        ("cdist", "loop", "context"),
        ("cdist", "gather", "context"),
    ]
    # Both declarations are read, the rule's first (no precedence: neither stands in for the other);
    # a context pair that is also the rule's is the rule's.
    assert rules.compared_pairs(
        rules.Faster(fast="fused", slow="loop"), ROLES, context=[("cdist", "loop"), ("fused", "loop")]
    ) == [("fused", "loop", "rule"), ("cdist", "loop", "context")]
