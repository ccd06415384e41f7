"""The judges of `cases/gan.py`: each verdict follows from what its check observed (a different observation
gives a different verdict); each is fed what a plausible wrong implementation would show."""

from __future__ import annotations

from harness.contract.record import Verdict


def test_gan_two_optimizers_verdict_is_computed_from_the_grads():
    from cases import gan

    seen = dict(leak_without=0.174, without_err=0.87, reuse_error="second time")
    assert gan.judge_detach(0.0, 0.0, True, zeroed_err=0.0, **seen).verdict is Verdict.HOLDS
    # One optimizer over both networks: a step moves the other network too.
    assert gan.judge_detach(0.0, 0.0, False, zeroed_err=0.0, **seen).verdict is Verdict.FAILS
    # G stepped with D's loss mixed in (no detach, or its grads not zeroed before its backward).
    assert gan.judge_detach(1e-3, 0.2, True, zeroed_err=0.0, **seen).verdict is Verdict.FAILS
    assert gan.judge_detach(0.0, 0.0, True, zeroed_err=0.87, **seen).verdict is Verdict.FAILS


def test_gan_d_losses_must_reach_the_optimal_discriminator():
    from cases import gan

    truth = gan.D_STAR
    assert gan.judge_d_losses([2.0244, -0.0057], [0.0197, 0.0150], truth, 20_000).verdict is Verdict.HOLDS
    # Swapped labels (real data labelled fake): D fits σ(−2x).
    swapped = gan.judge_d_losses([-2.02, 0.006], [0.0197, 0.0150], truth, 20_000)
    assert swapped.verdict is Verdict.FAILS and "NOT reached" in swapped.evidence
    # A loss that is not the log-likelihood (e.g. squared error on D) lands elsewhere.
    assert gan.judge_d_losses([1.5, 0.0], [0.0197, 0.0150], truth, 20_000).verdict is Verdict.FAILS


def test_gan_d_losses_swapped_labels_are_caught_by_the_fit():
    import torch

    from cases import gan

    fit, se = gan._fit_logistic_d(torch.device("cpu"), real_label=0, fake_label=1)
    assert gan.judge_d_losses(fit, se, gan.D_STAR, gan.N_D).verdict is Verdict.FAILS


def test_gan_expectation_gradient_against_the_closed_form():
    from cases import gan

    truth, se, spread = [0.62930, 0.25172], [8.3e-4, 2.6e-3], [0.261, 0.831]
    assert (
        gan.judge_expectation_gradient([0.62666, 0.24387], se, truth, spread, 100_000).verdict
        is Verdict.HOLDS
    )
    # The gradient of f at the mean sample, (a·e^{aθ₁}, 0): what swapping ∇ and E wrongly gives.
    wrong = gan.judge_expectation_gradient([0.5809, 0.0], se, truth, spread, 100_000)
    assert wrong.verdict is Verdict.FAILS and "NOT equal" in wrong.evidence


def test_gan_g_loss_must_raise_log_d_of_the_fakes():
    from cases import gan

    theory = (-5.935, -5.917, -2.9916)
    assert gan.judge_non_saturating((-5.935, -2.275, -1.087), theory).verdict is Verdict.HOLDS
    # G trained with the fake label (D's objective): E log D(G(z)) falls, G moves away from the data.
    assert gan.judge_non_saturating((-5.935, -7.5, -3.8), theory).verdict is Verdict.FAILS
