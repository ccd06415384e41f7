"""The judges of `cases/train/grad_accumulation.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and the notes' loop is judged as written."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def test_grad_accumulation_optimizer_sensitivity_judge():
    from cases.train import grad_accumulation as ga

    assert ga.judge_optimizer_sensitivity(ga.K - 1.0, 5.7e-6).verdict is Verdict.HOLDS
    assert ga.judge_optimizer_sensitivity(0.0, 5.7e-6).verdict is Verdict.FAILS
    assert ga.judge_optimizer_sensitivity(ga.K - 1.0, 3.0).verdict is Verdict.FAILS


def test_the_notes_loop_depends_on_the_criterion_reduction():
    from cases.train import grad_accumulation as ga

    # As observed: the sum-reduced criterion gives the big batch's gradient, the mean one k×.
    f = ga.judge_accumulated(True, False, float(ga.K), True, "TypeError (forward() takes 2)")
    assert f.verdict is Verdict.DEPENDS and "reduction" in f.evidence and "divide" in f.evidence
    assert [e.kind for e in f.errata] == [ErratumKind.TYPO]
    assert "criterion(net(traindata[i],labels[i]))" in f.errata[0].quote
    assert ga.judge_accumulated(True, False, float(ga.K), True, "").errata == ()
    # A loop that missed a micro-batch (or counted one twice): wrong even with a sum-reduced criterion.
    assert ga.judge_accumulated(False, False, ga.K - 1.0, True, "").verdict is Verdict.FAILS
    # A mean accumulation off by anything but exactly k×: fails.
    assert ga.judge_accumulated(True, False, ga.K * 1.25, True, "").verdict is Verdict.FAILS
    # Both reductions equal to the big batch (k = 1): holds.
    assert ga.judge_accumulated(True, True, 1.0, True, "").verdict is Verdict.HOLDS


def test_grad_accumulation_runs_the_notes_function_as_written():
    import torch

    from cases.train import grad_accumulation as ga

    net, x, y = ga._setup(torch.device("cpu"))
    mse = torch.nn.functional.mse_loss
    assert ga._run_notes(ga.NOTES_SOURCE, ga._copy(net), x, y, mse).startswith("NameError")
    renamed = ga.NOTES_SOURCE.replace("epochoptimizer", "optimizer")
    assert ga._run_notes(renamed, ga._copy(net), x, y, mse).startswith("TypeError")
    assert ga._run_notes(ga.NOTES_FIXED_SOURCE, ga._copy(net), x, y, mse) == ""


def test_zero_grad_once_depends_on_where_once_is():
    from cases.train import grad_accumulation as ga

    # Observed: once per step is right, once for the run leaves g1 + g2 in step 2.
    # As written, "once" is once: step 2 then uses g1+g2, so it fails, with once per step as advice.
    f = ga.judge_zero_grad_placement(0.0, 1.55, True)
    assert f.verdict is Verdict.FAILS and "g1+g2" in f.evidence and "once per optimizer step" in f.evidence
    # A zero_grad that did not clear (a stale gradient even once per step): fails.
    assert ga.judge_zero_grad_placement(0.3, 1.55, True).verdict is Verdict.FAILS
    # Gradients that did not accumulate across backwards: once for the run would do.
    assert ga.judge_zero_grad_placement(0.0, 0.0, False).verdict is Verdict.HOLDS
