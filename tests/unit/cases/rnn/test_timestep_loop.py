"""The judges of `cases/rnn/timestep_loop.py`: each verdict follows from what its check observed (a
different observation gives a different verdict)."""

from __future__ import annotations

from cases.rnn import timestep_loop as rnn
from harness.contract.record import Verdict


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
