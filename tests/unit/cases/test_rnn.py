"""The judges of `cases/rnn.py`: each verdict follows from what its check observed (a different observation
gives a different verdict)."""

from __future__ import annotations

from cases import rnn
from harness.contract.record import Verdict


def test_rnn_no_detach_and_growth_follow_the_observation():
    second = (2, "Trying to backward through the graph a second time")
    assert rnn.judge_no_detach(second, "step 2 raises 'one of the variables'").verdict is Verdict.HOLDS
    assert rnn.judge_no_detach(None, "ran without error").verdict is Verdict.FAILS
    assert rnn.judge_no_detach((3, second[1]), "").verdict is Verdict.FAILS
    assert rnn.judge_growth([52, 208, 364], [52, 52, 52], 19e3, 0.0, "d").verdict is Verdict.HOLDS
    flat = rnn.judge_growth([52, 52, 52], [52, 52, 52], 19e3, 0.0, "d")
    assert flat.verdict is Verdict.FAILS and "linearly" in flat.evidence
    assert rnn.judge_growth([52, 208, 364], [52, 104, 156], 19e3, 0.0, "d").verdict is Verdict.FAILS
    assert rnn.judge_growth([52, 208, 364], [52, 52, 52], 19e3, 40e3, "d").verdict is Verdict.FAILS


def test_rnn_in_place_reset_on_the_stand_in_is_context():
    f = rnn.judge_data_vs_detach(True, 4.63, "one of the variables needed for gradient computation")
    assert f.verdict is None and not f.errata and "4.63" in f.evidence
    assert "DIFFERENTLY" in rnn.judge_data_vs_detach(False, 4.63, "x").evidence


def test_rnn_notes_train_loop_fails_where_data_meets_the_lstm_tuple():
    f = rnn.judge_notes_train_loop("'tuple' object has no attribute 'data'", True, True)
    assert f.verdict is Verdict.FAILS and "(h, c)" in f.evidence and f.errata == ()
    # A network with a tensor state (nn.RNN, nn.GRU): the notes' loop runs and `.data` cuts.
    assert rnn.judge_notes_train_loop("", True, True).verdict is Verdict.HOLDS
    # A cut that leaves the graph joined (the second backward raises) is no cut.
    assert rnn.judge_notes_train_loop("", False, True).verdict is Verdict.FAILS


def test_rnn_lstm_head_fails_where_r_out_has_hidden_size_features():
    seen = [
        (64, (2, 28, 64), "mat1 and mat2 shapes cannot be multiplied (2x64 and 28x10)"),
        (28, (2, 28, 28), ""),
    ]
    f = rnn.judge_lstm_head(seen)
    assert f.verdict is Verdict.FAILS and "hidden_size == input_size" in f.evidence
    # Were r_out input_size wide at every hidden size, the notes' head would fit.
    assert rnn.judge_lstm_head([(64, (2, 28, 28), ""), (28, (2, 28, 28), "")]).verdict is Verdict.HOLDS


def test_rnn_notes_forward_judged_on_the_state_and_the_predictions():
    shapes = [(1, 2, 28), (1, 2, 28)]
    f = rnn.judge_notes_forward("tuple", shapes, True, True, (1, 2, 28))
    assert f.verdict is Verdict.HOLDS and "(h, c)" in f.evidence
    # A forward that returns the caller's stale state, or a state of the wrong shape, fails.
    assert rnn.judge_notes_forward("tuple", shapes, False, True, (1, 2, 28)).verdict is Verdict.FAILS
    assert rnn.judge_notes_forward("Tensor", [(2, 28)], True, True, (1, 2, 28)).verdict is Verdict.FAILS
    assert rnn.judge_notes_forward("tuple", shapes, True, False, (1, 2, 28)).verdict is Verdict.FAILS
    assert rnn.judge_notes_forward("NoneType", [], True, True, (1, 2, 28)).verdict is Verdict.FAILS
