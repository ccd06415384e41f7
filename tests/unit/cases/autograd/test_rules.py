"""The judges of `cases/autograd/rules.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


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


def test_index_assignment_no_gradient_claim_is_a_wrong_statement():
    from cases.autograd import rules

    grads = [0.0, 0.0, 6.0, 8.0, 10.0]
    f = rules.judge_index_assignment(True, True, True, grads)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_STATEMENT]
    # Gradients not through the assignment: 000's statement would be right, no erratum.
    g = rules.judge_index_assignment(False, True, True, grads)
    assert g.verdict is Verdict.FAILS and not g.errata
    assert rules.judge_index_assignment(True, True, False, grads).verdict is Verdict.FAILS
