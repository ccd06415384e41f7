"""The judges of `cases/autograd/hooks.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_hooks_forward_and_full_backward_follow_the_observation():
    from cases.autograd import hooks

    assert hooks.judge_forward_hook(True, (2, 3, 8, 8), (2, 5, 6, 6), True, True).verdict is Verdict.HOLDS
    assert hooks.judge_forward_hook(False, (2, 3, 8, 8), (2, 5, 6, 6), True, True).verdict is Verdict.FAILS
    assert hooks.judge_forward_hook(True, (2, 3, 8, 8), (2, 5, 6, 6), True, False).verdict is Verdict.FAILS
    right = [("Conv2d", True, True), ("TwoOps", True, True)]
    assert hooks.judge_full_backward_hook(right, []).verdict is Verdict.HOLDS
    wrong = hooks.judge_full_backward_hook([("Conv2d", True, True), ("TwoOps", False, True)], [])
    assert wrong.verdict is Verdict.FAILS and "TwoOps" in wrong.evidence


def test_hooks_register_backward_hook_is_a_deprecated_api_erratum():
    from cases.autograd import hooks

    warning = (
        "FutureWarning: 'Using a non-full backward hook when the forward contains multiple autograd Nodes'"
    )
    f = hooks.judge_notes_backward_hook(True, float("inf"), warning, "shape (7, 4) vs dL/dx (7, 6)", True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.DEPRECATED_API]
    assert "non-full backward hook" in f.errata[0].evidence and "(7, 4)" in f.errata[0].evidence
    only_documented = hooks.judge_notes_backward_hook(True, 0.0, "", "", True)
    assert only_documented.errata[0].kind is ErratumKind.DEPRECATED_API
    assert hooks.judge_notes_backward_hook(True, 0.0, "", "", False).errata == ()
    assert hooks.judge_notes_backward_hook(False, float("inf"), warning, "", True).verdict is Verdict.FAILS
