"""The judges of `cases/nn/grid_sample.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases.nn import grid_sample
from harness.contract.record import ErratumKind, Verdict


def _kinds(finding):
    return [e.kind for e in finding.errata]


# ---- nn.grid_sample ------------------------------------------------------------------------------


def test_grid_sample_identity_judge():
    ok = grid_sample.judge_identity({False: 1e-6, True: 1e-6}, 4e-6, True, 2)
    assert ok.verdict is Verdict.HOLDS
    assert grid_sample.judge_identity({False: 1e-3, True: 1e-6}, 4e-6, True, 2).verdict is Verdict.FAILS
    assert grid_sample.judge_identity({False: 1e-6, True: 1e-6}, 4e-6, False, 2).verdict is Verdict.FAILS


def test_grid_sample_align_corners_judge_and_typo():
    f = grid_sample.judge_align_corners(3.0, 1e-6, 4e-6, False, 2e-6, 1.3)
    assert f.verdict is Verdict.HOLDS and _kinds(f) == [ErratumKind.TYPO]
    assert grid_sample.judge_align_corners(3.0, 1e-6, 4e-6, True, 2e-6, 1.3).errata == ()
    assert grid_sample.judge_align_corners(0.0, 1e-6, 4e-6, False, 2e-6, 1.3).verdict is Verdict.FAILS
    assert grid_sample.judge_align_corners(3.0, 1.0, 4e-6, False, 2e-6, 1.3).verdict is Verdict.FAILS
    # interpolate disagreeing with grid_sample under the same align_corners, or agreeing under
    # different ones: the notes' "keep them consistent" would not be what decides.
    assert grid_sample.judge_align_corners(3.0, 1e-6, 4e-6, True, 0.6, 1.3).verdict is Verdict.FAILS
    assert grid_sample.judge_align_corners(3.0, 1e-6, 4e-6, True, 2e-6, 1e-6).verdict is Verdict.FAILS


def test_grid_sample_align_corners_meaning_fails_where_interior_samples_move():
    f = grid_sample.judge_align_corners_meaning(0.57, 1.03, 4e-6)
    assert f.verdict is Verdict.FAILS and "outer edges" in f.evidence and not f.errata
    # A setting that changed the corners only would bear the notes out.
    assert grid_sample.judge_align_corners_meaning(1e-7, 1.03, 4e-6).verdict is Verdict.HOLDS


def test_grid_sample_corners_judge():
    seen = {"corners_true": True, "border_top_left": True, "outside_is_padding": True}
    assert grid_sample.judge_corners(seen).verdict is Verdict.HOLDS
    assert grid_sample.judge_corners({**seen, "corners_true": False}).verdict is Verdict.FAILS
    assert grid_sample.judge_corners({**seen, "outside_is_padding": False}).verdict is Verdict.FAILS
