"""The judges of `cases/autograd/custom_function.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_custom_function_forward_and_module_follow_the_observation():
    from cases.autograd import custom_function as cf

    assert cf.judge_forward({"NotesBinarizedF": 0, "BinarizedF": 0}, 257).verdict is Verdict.HOLDS
    assert cf.judge_forward({"NotesBinarizedF": 1, "BinarizedF": 0}, 257).verdict is Verdict.FAILS
    assert cf.judge_module_in_network([], 0.5, True).verdict is Verdict.HOLDS
    assert cf.judge_module_in_network([], 0.0, True).verdict is Verdict.FAILS
    assert cf.judge_module_in_network(["1.w"], 0.5, True).verdict is Verdict.FAILS
    assert cf.judge_module_in_network([], 0.5, False).verdict is Verdict.FAILS


def test_custom_function_ste_erratum_never_decides():
    from cases.autograd import custom_function as cf

    f = cf.judge_ste_backward(True, 3.47, True)
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert "3.47" in f.errata[0].evidence and "out.sum() only" in f.errata[0].evidence
    assert not cf.judge_ste_backward(True, 0.0, True).errata
    assert cf.judge_ste_backward(True, 0.0, False).errata  # wrong even with all-ones upstream
    assert cf.judge_ste_backward(False, 3.47, True).verdict is Verdict.FAILS


def test_custom_function_gradcheck_decides_on_the_smooth_function():
    from cases.autograd import custom_function as cf

    assert cf.judge_gradcheck(True, False).verdict is Verdict.HOLDS
    assert cf.judge_gradcheck(False, False).verdict is Verdict.FAILS
    assert "accepts" in cf.judge_gradcheck(True, True).evidence


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- autograd.custom_function ----------------------------------------------------------------------


def test_ste_backward_claim_quotes_the_technique_and_the_faulty_code_is_the_erratum():
    from cases import get_case
    from cases.autograd import custom_function as cf

    f = cf.judge_ste_backward(True, 3.47, True)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.WRONG_SHAPE_OR_FORMULA]
    assert "torch.where(input_abs <= 1, ones, zeros)" in f.errata[0].quote
    assert cf.judge_ste_backward(False, 3.47, True).verdict is Verdict.FAILS
    (claim,) = [c for c in get_case("autograd.custom_function").claims if c.id == "ste_backward"]
    assert "torch.where" not in claim.quote and "backward" in claim.quote


def test_autograd_ste_and_hook_errata_never_decide():
    from cases.autograd import custom_function, hooks

    f = custom_function.judge_ste_backward(True, 3.47)
    assert f.verdict is Verdict.HOLDS and f.errata[0].kind is ErratumKind.WRONG_SHAPE_OR_FORMULA
    assert custom_function.judge_ste_backward(True, 0.0).errata == ()
    assert custom_function.judge_ste_backward(False, 0.0).verdict is Verdict.FAILS
    h = hooks.judge_notes_backward_hook(True, float("inf"), "Using a non-full backward hook", "shape")
    assert h.verdict is Verdict.HOLDS and h.errata[0].kind is ErratumKind.DEPRECATED_API
    assert hooks.judge_notes_backward_hook(True, 0.0, "", "").errata == ()
    assert hooks.judge_notes_backward_hook(False, 0.0, "", "").verdict is Verdict.FAILS
