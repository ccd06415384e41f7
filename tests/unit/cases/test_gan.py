"""The judges of `cases/gan.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import Verdict


def test_gan_detach_verdict_is_computed_from_the_grads():
    from cases import gan

    seen = dict(leak_without=0.174, without_err=0.87, zeroed_err=0.0, reuse_error="second time")
    assert gan.judge_detach(0.0, 0.0, True, **seen).verdict is Verdict.HOLDS
    assert gan.judge_detach(1e-3, 0.0, True, **seen).verdict is Verdict.FAILS  # detach leaked
    assert gan.judge_detach(0.0, 0.2, True, **seen).verdict is Verdict.FAILS  # G stepped off its loss
    assert gan.judge_detach(0.0, 0.0, False, **seen).verdict is Verdict.FAILS  # an optimizer crossed over
    assert gan.judge_detach(0.0, 0.0, True, 0.0, 0.0, 0.0, None).verdict is Verdict.FAILS  # nothing to cut


def test_gan_non_saturating_loss_verdict_is_computed():
    from cases import gan

    assert gan.judge_non_saturating(-0.0025, -0.9975, True, True).verdict is Verdict.HOLDS
    assert gan.judge_non_saturating(-0.9975, -0.0025, True, True).verdict is Verdict.FAILS
    assert gan.judge_non_saturating(-0.0025, -0.9975, False, True).verdict is Verdict.FAILS
    assert gan.judge_non_saturating(-0.0025, -0.9975, True, False).verdict is Verdict.FAILS


# ---- gan.two_optimizers --------------------------------------------------------------------------


def test_gan_d_losses_judge():
    from cases import gan

    assert gan.judge_d_losses(13.5, 13.5, 26.8, 26.8).verdict is Verdict.HOLDS
    # A swapped label: BCE with the fake label is −Σlog(1−D), not −Σlog D.
    assert gan.judge_d_losses(13.5, 26.8, 26.8, 13.5).verdict is Verdict.FAILS


def test_gan_expectation_gradient_judge():
    from cases import gan

    assert gan.judge_expectation_gradient(1.7e-16, 32).verdict is Verdict.HOLDS
    assert gan.judge_expectation_gradient(0.3, 32).verdict is Verdict.FAILS
