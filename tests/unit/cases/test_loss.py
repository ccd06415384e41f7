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
    assert loss.judge_label_smoothing(0.0, 1e-15, 0.015, 5.1, default=0.1).verdict is Verdict.FAILS
    assert loss.judge_ignore_index(1e-15, 0, 1e-15, 5.49, 4.12, 48, 64).verdict is Verdict.HOLDS
    assert loss.judge_ignore_index(1e-15, 3, 1e-15, 5.49, 4.12, 48, 64).verdict is Verdict.FAILS
    assert loss.judge_ignore_index(0.3, 0, 1e-15, 5.49, 4.12, 48, 64).verdict is Verdict.FAILS
    # the mean's denominator is an image in the notes: reported, deciding nothing
    f = loss.judge_ignore_index(1e-15, 0, 1.4, 4.12, 4.12, 48, 64)
    assert f.verdict is Verdict.HOLDS and "4.12" in f.evidence
    assert loss.judge_weighted(0.0, 0.0, 5.18, 8.09).verdict is Verdict.HOLDS
    assert loss.judge_weighted(1e-2, 0.0, 5.18, 8.09).verdict is Verdict.FAILS  # weight ignored per row
    assert loss.judge_k_dim((4, 6, 7), 1e-16, 0.0).verdict is Verdict.HOLDS
    assert loss.judge_k_dim((4, 5, 6, 7), 1e-16, 0.0).verdict is Verdict.FAILS
    assert loss.judge_k_dim((4, 6, 7), 1e-3, 0.0).verdict is Verdict.FAILS
    f = loss.judge_k_classes(2, 5, [0, 1, 2, 3, 4])
    assert f.verdict is Verdict.FAILS and "NOT k = 2" in f.evidence
    assert loss.judge_k_classes(2, 5, [0, 1]).verdict is Verdict.HOLDS  # were the classes k
    assert loss.judge_indices_faster(Ratio(1.4, 1.34, 1.46, 12), None, "w").verdict is Verdict.HOLDS
    assert loss.judge_indices_faster(Ratio(1.0, 0.98, 1.03, 12), None, "w").verdict is Verdict.FAILS
    # loss.cross_entropy read depends under load though its interval cleared the band: it counts.
    assert loss.judge_indices_faster(Ratio(1.4, 1.34, 1.46, 12), "busy", "w").verdict is Verdict.HOLDS
    same = Ratio(1.0, 0.98, 1.02, 12)
    assert loss.judge_indices_faster(same, "busy", "w").verdict is Verdict.COULD_NOT_JUDGE


def test_timings_the_notes_do_not_claim_decide_nothing():
    from cases import get_case
    from harness.contract import rules

    for case_id in ("rnn.timestep_loop", "rnn.hidden_detach", "clip.grad_norm"):
        case = get_case(case_id)
        assert not [r for r in rules.claimed(case.verdict) if isinstance(r, (rules.Faster, rules.Lighter))]
    claimed = {r.claim for r in rules.claimed(get_case("loss.cross_entropy").verdict)}
    assert claimed == {"indices_faster"}


def test_the_notes_k_classes_fails_as_observed():
    import torch

    from cases import get_case

    case = get_case("loss.cross_entropy")
    assert case.checks["k_classes"].devices == ("cpu",)
    assert case.checks["k_classes"].fn(torch.device("cpu")).verdict is Verdict.FAILS
    (claim,) = [c for c in case.claims if c.id == "k_classes"]
    assert claim.quote == "一共有k个分类"
