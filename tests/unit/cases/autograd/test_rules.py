"""The judges of `cases/autograd/rules.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import Verdict


def test_autograd_rule_verdict_names_what_was_not_observed():
    from cases.autograd import rules

    assert rules.judge_rule("r", {"a raises": True, "b works": True}).verdict is Verdict.HOLDS
    f = rules.judge_rule("r", {"a raises": True, "b works": False})
    assert f.verdict is Verdict.FAILS and "b works" in f.evidence


def test_only_leaves_have_grad_unless_retain_grad():
    from cases.autograd import rules

    f = rules.judge_leaf_grad(True, True, "The .grad attribute of a Tensor that is not a leaf", True)
    assert f.verdict is Verdict.HOLDS and not f.errata and "warns" in f.evidence
    assert rules.judge_leaf_grad(True, False, "", True).verdict is Verdict.FAILS
    assert rules.judge_leaf_grad(True, True, "", False).verdict is Verdict.FAILS
    assert rules.judge_leaf_grad(False, True, "", True).verdict is Verdict.FAILS


def test_index_assignment_is_judged_without_errata():
    from cases.autograd import rules

    grads = [0.0, 0.0, 6.0, 8.0, 10.0]
    f = rules.judge_index_assignment(True, True, True, grads)
    assert f.verdict is Verdict.HOLDS and not f.errata
    # Gradients not through the assignment, or a leaf written in place without an error.
    assert rules.judge_index_assignment(False, True, True, grads).verdict is Verdict.FAILS
    assert rules.judge_index_assignment(True, True, False, grads).verdict is Verdict.FAILS


def test_assignment_no_gradient_is_a_claim_that_fails_where_gradients_flow():
    from cases import get_case
    from cases.autograd import rules

    f = rules.judge_assignment_no_gradient(True, [0.0, 0.0, 6.0, 8.0, 10.0], 6.0)
    assert f.verdict is Verdict.FAILS and not f.errata and "differentiates through" in f.evidence
    # An autograd that gave no (or a wrong) gradient through the assignment: the notes would be right.
    assert rules.judge_assignment_no_gradient(False, [0.0] * 5, 0.0).verdict is Verdict.HOLDS
    (claim,) = [c for c in get_case("autograd.rules").claims if c.id == "assignment_no_gradient"]
    assert claim.quote == "尽量减少对矩阵的直接赋值(其实赋值的话根本没办法算梯度)"
