"""The pairs of a results file that recorded none (harness/contract/unrecorded_pairs.py), read as
the suite timed them then: the rule's speed pairs, else its memory pairs, else optimized over
naive, else the library over naive as context."""

from __future__ import annotations

from harness.contract import rules, unrecorded_pairs

ROLES = {"loop": "naive", "fused": "optimized", "cdist": "library"}


def test_a_recorded_rule_names_the_pairs_speed_before_memory():
    rule = rules.AllOf((rules.Faster(fast="fused", slow="loop"), rules.Lighter(light="cdist", heavy="loop")))
    assert unrecorded_pairs.as_timed_then(rule, ROLES) == [("fused", "loop", "rule")]
    assert unrecorded_pairs.as_timed_then(rules.Lighter(light="cdist", heavy="loop"), ROLES) == [
        ("cdist", "loop", "rule")
    ]


def test_without_a_rule_naming_these_variants_the_roles_decide_as_then():
    # No rule recorded (schema 1): optimized over naive, judged.
    assert unrecorded_pairs.as_timed_then(None, ROLES) == [("fused", "loop", "rule")]
    # A rule deciding by its findings: the same pair, as context.
    assert unrecorded_pairs.as_timed_then(rules.FromFindings(), ROLES) == [("fused", "loop", "context")]
    # No optimized variant: the library over the naive way, as context.
    assert unrecorded_pairs.as_timed_then(rules.FromFindings(), {"loop": "naive", "cdist": "library"}) == [
        ("cdist", "loop", "context")
    ]
    assert unrecorded_pairs.as_timed_then(rules.Faster(fast="x", slow="y"), {"loop": "naive"}) == []
