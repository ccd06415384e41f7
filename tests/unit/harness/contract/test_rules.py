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


def test_compared_pairs_are_the_rules_else_the_declared_context_and_never_guessed_from_roles():
    assert rules.compared_pairs(rules.Faster(fast="fused", slow="gather"), ROLES) == [
        ("fused", "gather", "rule")
    ]
    # A role in a rule expands to its variants.
    assert rules.compared_pairs(rules.Faster(fast="optimized", slow="naive"), ROLES) == [
        ("fused", "loop", "rule"),
        ("fused", "gather", "rule"),
    ]
    # Memory rules name the pairs where no speed rule does.
    assert rules.compared_pairs(rules.Lighter(light="fused", heavy="loop"), ROLES) == [
        ("fused", "loop", "rule")
    ]
    # A rule naming variants this comparison lacks, or one deciding by findings: the declared
    # context pairs, and nothing where none is declared (the optimized and library variants are
    # not paired with the naive ones by their roles).
    assert rules.compared_pairs(rules.Faster(fast="x", slow="y"), ROLES) == []
    assert rules.compared_pairs(rules.FromFindings(), ROLES) == []
    assert rules.compared_pairs(rules.FromFindings(), ROLES, context=[("cdist", "loop")]) == [
        ("cdist", "loop", "context")
    ]
    assert rules.compared_pairs(rules.FromFindings(), ROLES, context=[("library", "naive")]) == [
        ("cdist", "loop", "context"),
        ("cdist", "gather", "context"),
    ]
    # The rule's pairs win over the context where both name variants here.
    assert rules.compared_pairs(
        rules.Faster(fast="fused", slow="loop"), ROLES, context=[("cdist", "loop")]
    ) == [("fused", "loop", "rule")]
