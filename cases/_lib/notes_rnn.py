"""The notes' network (001 "网络(分类)", and "# 网络相同" for the regression), built from the note file,
and the inputs both RNN cases draw. The notes' network is an LSTM: its state is the pair (h, c), so
the notes' `h_state = h_state.data` raises on it; the timed training variants of `hidden_detach` run
an nn.RNN instead (a tensor state), a stand-in named as such."""

from __future__ import annotations

import torch
from torch import nn

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16


def randn(shape, g, dtype, device, scale=1.0):
    return (scale * torch.randn(shape, generator=g, device=device)).to(dtype)


# The notes' constants ("定义"): TIME_STEP = 28, INPUT_SIZE = 28.
TIME_STEP = INPUT_SIZE = 28


def notes_lines() -> list[str]:
    from notes.text import note_path

    return note_path("001").read_text(encoding="utf-8").splitlines()


def notes_block(first_line: str) -> list[str]:
    """The lines of the 001 code block that starts with `first_line`, up to its closing fence."""
    lines = notes_lines()
    start = next(n for n, line in enumerate(lines) if line.strip().startswith(first_line))
    end = next(n for n in range(start, len(lines)) if lines[n].strip().startswith("```"))
    return lines[start:end]


def notes_network(input_size: int, hidden_size: int, output_size: int) -> nn.Module:
    """The notes' network (001 "网络(分类)", and "# 网络相同" for the regression), from the note file:
    its nn.LSTM with the names it lists given as keyword arguments (as written the call has no
    commas and no values: the notes' snippets check's erratum), one layer and batch first as its
    comment says; its head line `self.out = nn.Linear(input_size, output_size)` as written; and the
    regression forward as written, returning `hidden_state` where it says `h_state` (a name the
    notes never define there: the notes' snippets check's erratum)."""
    classifier = notes_block("self.rnn = nn.LSTM(")
    head = next(line.strip() for line in classifier if line.strip().startswith("self.out = "))
    forward = notes_block("def forward(self,x,hidden_state):")
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
