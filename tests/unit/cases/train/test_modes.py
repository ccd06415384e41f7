"""The judges of `cases/train/modes.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from harness.contract.record import Verdict

# ---- train.modes ---------------------------------------------------------------------------------


def test_dropout_scale_follows_the_observed_rate_and_scaling():
    from cases.train import modes

    ok = modes.judge_dropout_scale(0.3, 200_000, 0.3, 1e-7, 4.3e-5, True, 1.0)
    assert ok.verdict is Verdict.HOLDS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.35, 1e-7, 4.3e-5, True, 1.0).verdict is Verdict.FAILS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.3, 0.3, 4.3e-5, True, 1.0).verdict is Verdict.FAILS
    assert modes.judge_dropout_scale(0.3, 200_000, 0.3, 1e-7, 4.3e-5, False, 1.0).verdict is Verdict.FAILS


def test_dropout2d_claim_is_the_notes_words_and_fails_where_positions_are_mixed():
    from cases import get_case
    from cases.train import modes

    # What torch does: whole channels, so positions keep some channels and lose others.
    d = modes.judge_dropout2d(120, 0, 120, 24, 64, True)
    assert d.verdict is Verdict.FAILS and not d.errata and "whole channels" in d.evidence
    # What the notes describe (every position all-zero across channels or kept) would hold.
    assert modes.judge_dropout2d(0, 30, 120, 0, 64, False).verdict is Verdict.HOLDS
    # Nothing dropped at all says nothing for the notes' statement.
    assert modes.judge_dropout2d(0, 0, 120, 0, 64, False).verdict is Verdict.FAILS
    (claim,) = [c for c in get_case("train.modes").claims if c.id == "dropout2d"]
    assert claim.quote == "nn.Dropout2d 是将输入中的一个位置处的所有通道全部置 0"


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
