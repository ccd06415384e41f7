"""The judges of `cases/rnn/hidden_detach.py`: each verdict follows from what its check observed (a
different observation gives a different verdict)."""

from __future__ import annotations

from cases.rnn import hidden_detach as rnn
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
