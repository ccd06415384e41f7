"""The judges of `cases/loss.py`: each verdict follows from what its check observed (a different observation
gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import loss
from harness.contract.gain import Ratio
from harness.contract.record import Verdict


def test_loss_judges():
    assert loss.judge_label_smoothing(0.0, 1e-15, 0.015, 5.1).verdict is Verdict.HOLDS
    assert loss.judge_label_smoothing(1e-3, 1e-15, 0.015, 5.1).verdict is Verdict.FAILS
    assert loss.judge_label_smoothing(0.0, 0.0, 0.0, 5.1).verdict is Verdict.FAILS  # changed nothing
    assert loss.judge_ignore_index(1e-15, 0, 5.49, 4.12, 48, 64).verdict is Verdict.HOLDS
    assert loss.judge_ignore_index(1e-15, 3, 5.49, 4.12, 48, 64).verdict is Verdict.FAILS
    assert loss.judge_ignore_index(1e-15, 0, 5.49, 5.49, 48, 64).verdict is Verdict.FAILS  # ÷N
    assert loss.judge_weighted(0.0, 0.0, 5.18, 8.09).verdict is Verdict.HOLDS
    assert loss.judge_weighted(1e-2, 0.0, 5.18, 8.09).verdict is Verdict.FAILS
    assert loss.judge_k_dim((4, 6, 7), 1e-16, 0.0).verdict is Verdict.HOLDS
    assert loss.judge_k_dim((4, 5, 6, 7), 1e-16, 0.0).verdict is Verdict.FAILS
    assert loss.judge_k_dim((4, 6, 7), 1e-3, 0.0).verdict is Verdict.FAILS
    assert loss.judge_indices_faster(Ratio(1.4, 1.34, 1.46, 12), None, "w").verdict is Verdict.HOLDS
    assert loss.judge_indices_faster(Ratio(1.0, 0.98, 1.03, 12), None, "w").verdict is Verdict.FAILS
    assert loss.judge_indices_faster(Ratio(1.4, 1.34, 1.46, 12), "busy", "w").verdict is Verdict.DEPENDS


def test_timings_the_notes_do_not_claim_decide_nothing():
    from cases import get_case
    from harness.contract import rules

    for case_id in ("rnn.timestep_loop", "rnn.hidden_detach", "clip.grad_norm"):
        case = get_case(case_id)
        assert not [r for r in rules.claimed(case.verdict) if isinstance(r, (rules.Faster, rules.Lighter))]
    claimed = {r.claim for r in rules.claimed(get_case("loss.cross_entropy").verdict)}
    assert claimed == {"indices_faster"}
