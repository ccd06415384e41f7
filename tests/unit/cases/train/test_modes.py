"""The judges of `cases/train/modes.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import ErratumKind, Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- train.modes ---------------------------------------------------------------------------------


def test_dropout_scale_follows_the_observed_rate_and_scaling():
    from cases.train import modes

    ok = modes.judge_dropout_scale(0.3, 200_000, 0.3, 1e-7, 4.3e-5, True, 1.0)
    assert ok.verdict is Verdict.HOLDS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.35, 1e-7, 4.3e-5, True, 1.0).verdict is Verdict.FAILS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.3, 0.3, 4.3e-5, True, 1.0).verdict is Verdict.FAILS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.3, 1e-7, 4.3e-5, False, 1.0).verdict is Verdict.FAILS


def test_dropout2d_wording_is_an_erratum_and_whole_channels_decide():
    from cases.train import modes

    d = modes.judge_dropout2d(True, 120, 0, "e", 120)
    assert d.verdict is Verdict.HOLDS and _kinds(d) == [ErratumKind.WRONG_STATEMENT]
    assert modes.judge_dropout2d(True, 0, 120, "e", 120).errata == ()  # had positions been zeroed whole
    assert modes.judge_dropout2d(False, 120, 0, "e", 120).verdict is Verdict.FAILS


def test_batchnorm_and_default_mode_follow_the_hand_computation():
    from cases.train import modes

    close = {"momentum=0.1 running_mean": True, "momentum=None is the cumulative average": True}
    assert modes.judge_batchnorm(close, True, "n").verdict is Verdict.HOLDS
    f = modes.judge_batchnorm({**close, "momentum=0.1 running_mean": False}, True, "n")
    assert f.verdict is Verdict.FAILS and "running_mean" in f.evidence
    assert modes.judge_batchnorm(close, False, "n").verdict is Verdict.FAILS
    assert modes.judge_default_mode(True, True, True, 5).verdict is Verdict.HOLDS
    assert modes.judge_default_mode(False, True, True, 5).verdict is Verdict.FAILS
    assert modes.judge_default_mode(True, True, False, 5).verdict is Verdict.FAILS
