"""`cases/_lib/notes_rnn.py`: the notes' network is built from their snippets as written (an LSTM
with the notes' head), and its forward runs on the notes' shapes."""

from __future__ import annotations

import torch
from torch import nn

from cases._lib import notes_rnn as notes_network
from notes import parse


def test_the_notes_network_is_their_lstm_with_their_head():
    net = notes_network.notes_network(notes_network.INPUT_SIZE, 64, 1)
    assert isinstance(net.rnn, nn.LSTM) and net.rnn.batch_first and net.rnn.hidden_size == 64
    # The notes' head line as written: Linear(input_size, output_size), whatever the hidden size.
    assert (net.out.in_features, net.out.out_features) == (notes_network.INPUT_SIZE, 1)


def test_the_snippets_read_are_the_notes_classifier_regression_forward_and_train_loop():
    assert parse.snippet_text(notes_network.CLASSIFIER).startswith("self.rnn = nn.LSTM(")
    assert "def forward(self,x,hidden_state):" in parse.snippet_text(notes_network.REGRESSION_FORWARD)
    assert parse.snippet_text(notes_network.TRAIN_LOOP).startswith("h_state = None")


def test_randn_is_seeded_and_scaled():
    a = notes_network.randn((3, 4), torch.Generator().manual_seed(0), torch.float32, "cpu", scale=2.0)
    b = notes_network.randn((3, 4), torch.Generator().manual_seed(0), torch.float32, "cpu")
    assert torch.equal(a, 2.0 * b)
