"""The judges of `cases/autograd/custom_function.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and the notes' BinarizedF is judged as written."""

from __future__ import annotations

from harness.contract.record import Verdict


def test_custom_function_forward_follows_the_observation():
    from cases.autograd import custom_function as cf

    assert cf.judge_forward(0, 257).verdict is Verdict.HOLDS
    # A forward with sign(0) = 0 or −1 (torch.sign, input_ > 0) is wrong on the edge value.
    assert cf.judge_forward(1, 257).verdict is Verdict.FAILS


def test_module_layer_judges_the_wrapper_on_what_it_routes():
    from cases.autograd import custom_function as cf

    assert cf.judge_module_in_network([], 0.5, True).verdict is Verdict.HOLDS
    # A wrapper that detaches (no gradient reaches the first Linear), owns a parameter, or routes
    # something other than its Function's backward.
    assert cf.judge_module_in_network([], 0.0, True).verdict is Verdict.FAILS
    assert cf.judge_module_in_network(["1.w"], 0.5, True).verdict is Verdict.FAILS
    assert cf.judge_module_in_network([], 0.5, False).verdict is Verdict.FAILS


def test_ste_backward_is_judged_on_the_notes_class():
    from cases.autograd import custom_function as cf

    # What the notes' backward gives: right for out.sum() only, 54× off in the net, does not train.
    f = cf.judge_ste_backward(True, 3.47, False, 54.5, -0.021, True, (0.75, 0.08))
    assert f.verdict is Verdict.FAILS and not f.errata
    assert "drops output_grad" in f.evidence and "54.5×" in f.evidence and "cosine -0.021" in f.evidence
    assert "grad_output * mask" in f.evidence and "use that" in f.evidence
    # A backward with the chain rule applied holds.
    assert cf.judge_ste_backward(True, 0.0, True, 1.0, 1.0, True, (0.08, 0.08)).verdict is Verdict.HOLDS
    # Wrong even for the all-ones upstream, or right in isolation but not in the net: fails.
    assert cf.judge_ste_backward(False, 0.0, True, 1.0, 1.0, True, (0.1, 0.1)).verdict is Verdict.FAILS
    assert cf.judge_ste_backward(True, 0.0, False, 2.0, 0.9, True, (0.1, 0.1)).verdict is Verdict.FAILS
    # The advice is only given where the corrected form was seen to work.
    no_advice = cf.judge_ste_backward(True, 3.47, False, 54.5, -0.02, False, (0.75, 0.9))
    assert "use that" not in no_advice.evidence and "still does NOT" in no_advice.evidence


def test_custom_function_gradcheck_decides_on_the_smooth_function():
    from cases.autograd import custom_function as cf

    assert cf.judge_gradcheck(True, False).verdict is Verdict.HOLDS
    assert cf.judge_gradcheck(False, False).verdict is Verdict.FAILS
    assert "accepts" in cf.judge_gradcheck(True, True).evidence


def test_the_notes_class_is_compiled_from_the_notes():
    import torch

    from cases.autograd import custom_function as cf

    notes_f, notes_module = cf.notes_classes()
    assert notes_f.__name__ == "BinarizedF" and notes_f is not cf.BinarizedF
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], requires_grad=True)
    (notes_f.apply(x) * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]  # the mask: output_grad 3 is dropped
    assert isinstance(notes_module(), torch.nn.Module)
