"""The notes' network (001 "网络(分类)", and "# 网络相同" for the regression), built from the note file,
and the inputs both RNN cases draw. The notes' network is an LSTM: its state is the pair (h, c), so
the notes' `h_state = h_state.data` raises on it; the timed training variants of `hidden_detach` run
an nn.RNN instead (a tensor state), a stand-in named as such."""

from __future__ import annotations

import torch
from torch import nn

from notes import parse

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16


def randn(shape, g, dtype, device, scale=1.0):
    return (scale * torch.randn(shape, generator=g, device=device)).to(dtype)


# The notes' constants ("定义"): TIME_STEP = 28, INPUT_SIZE = 28.
TIME_STEP = INPUT_SIZE = 28


# 001's snippets (000 repeats them word for word): the classifier, the regression's forward, the
# train loop that repacks the hidden state.
CLASSIFIER, REGRESSION_FORWARD, TRAIN_LOOP = "001#1", "001#2", "001#3"


def notes_network(input_size: int, hidden_size: int, output_size: int) -> nn.Module:
    """The notes' network (001 "网络(分类)", and "# 网络相同" for the regression), from the note file:
    its nn.LSTM with the names it lists given as keyword arguments (as written the call has no
    commas and no values: the notes' snippets check's erratum), one layer and batch first as its
    comment says; its head line `self.out = nn.Linear(input_size, output_size)` as written; and the
    regression forward as written, returning `hidden_state` where it says `h_state` (a name the
    notes never define there: the notes' snippets check's erratum)."""
    head = parse.snippet_text(CLASSIFIER, "self.out = ", "self.out = ").strip()
    forward = parse.snippet_text(REGRESSION_FORWARD, "def forward(self,x,hidden_state):").splitlines()
    forward = [line.replace("dim=1), h_state", "dim=1), hidden_state") for line in forward]
    code = "\n".join(
        [
            "class Net(nn.Module):",
            "    def __init__(self, input_size, hidden_size, output_size):",
            "        super().__init__()",
            "        self.rnn = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=1, "
            "batch_first=True)",
            "        " + head,
        ]
        + ["    " + line for line in forward]
    )
    scope = {"nn": nn, "torch": torch}
    exec(code, scope)  # noqa: S102 - the notes' own text
    return scope["Net"](input_size, hidden_size, output_size)
