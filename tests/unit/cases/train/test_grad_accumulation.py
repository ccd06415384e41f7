"""The judges of `cases/train/grad_accumulation.py`: each verdict follows from what its check observed (a
different observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict

# ---- train.grad_accumulation ---------------------------------------------------------------------


def test_grad_accumulation_optimizer_sensitivity_judge():
    from cases.train import grad_accumulation as ga

    assert ga.judge_optimizer_sensitivity(ga.K - 1.0, 5.7e-6).verdict is Verdict.HOLDS
    assert ga.judge_optimizer_sensitivity(0.0, 5.7e-6).verdict is Verdict.FAILS
    assert ga.judge_optimizer_sensitivity(ga.K - 1.0, 3.0).verdict is Verdict.FAILS


def test_grad_accumulation_judged_on_the_scaled_sum():
    from cases.train import grad_accumulation as ga

    f = ga.judge_accumulated(True, 6e-8, 4.0, "TypeError", "NameError")
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.TYPO] * 2
    assert [e.kind for e in ga.judge_accumulated(True, 6e-8, 4.0, "", "NameError").errata] == [
        ErratumKind.TYPO
    ]
    assert ga.judge_accumulated(True, 6e-8, 4.0, "", "").errata == ()
    assert ga.judge_accumulated(False, 0.25, 4.0, "", "").verdict is Verdict.FAILS


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- train.grad_accumulation ---------------------------------------------------------------------


def test_grad_accumulation_slips_are_typos_only_when_observed():
    from cases.train import grad_accumulation as ga

    f = ga.judge_accumulated(True, 6e-8, 4.0, "TypeError (forward() takes 2)", "NameError (optimizer)")
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO, ErratumKind.TYPO]
    assert ga.judge_accumulated(True, 6e-8, 4.0, "", "").errata == ()
    assert ga.judge_accumulated(True, 6e-8, 1.0, "", "").verdict is Verdict.HOLDS  # the 4x never decides
    assert ga.judge_accumulated(False, 0.25, 4.0, "", "").verdict is Verdict.FAILS


def test_grad_accumulation_runs_the_notes_function_as_written():
    import torch

    from cases.train import grad_accumulation as ga

    net, x, y = ga._setup(torch.device("cpu"))
    mse = torch.nn.functional.mse_loss
    assert ga._run_notes(ga.NOTES_SOURCE, ga._copy(net), x, y, mse).startswith("NameError")
    renamed = ga.NOTES_SOURCE.replace("epochoptimizer", "optimizer")
    assert ga._run_notes(renamed, ga._copy(net), x, y, mse).startswith("TypeError")
    assert ga._run_notes(ga.NOTES_FIXED_SOURCE, ga._copy(net), x, y, mse) == ""


def test_zero_grad_once_per_step_decides_and_once_per_run_is_context():
    from cases.train import grad_accumulation as ga

    f = ga.judge_zero_grad_placement(0.0, 1.55, True)
    assert f.verdict is Verdict.HOLDS and "g1+g2" in f.evidence
    assert ga.judge_zero_grad_placement(0.0, 0.0, False).verdict is Verdict.HOLDS
    assert ga.judge_zero_grad_placement(0.3, 1.55, True).verdict is Verdict.FAILS
