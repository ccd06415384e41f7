"""`rnn.timestep_loop` (notes 000/001 "RNN"): `Linear` acts on the last axis, so one call over
(B, T, H) is the loop over T without T kernel launches and without `torch.stack`'s copy."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cases._lib.inputs import generator
from cases._lib.notes_rnn import INPUT_SIZE, TIME_STEP, notes_network, randn
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Finding,
    Tol,
    Verdict,
    naive,
    optimized,
)
from harness.contract.rules import AllOf, Faster, FromFindings

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16


def make_rnn_output(size, dtype, device, seed):
    """r_out (B, T, H) as an LSTM would hand it over (values in (-1, 1)), and the head Linear(H, O)."""
    g = generator(device, seed)
    r_out = torch.tanh(randn((size["b"], size["t"], size["h"]), g, dtype, device))
    w = randn((size["o"], size["h"]), g, dtype, device, scale=size["h"] ** -0.5)
    b = randn((size["o"],), g, dtype, device)
    return r_out, w, b


def per_step_loop(r_out, w, b):
    # The notes' loop: T launches of a (B, H)×(H, O) GEMM, each reading a strided slice, then
    # stack copies the T outputs (B·T·O elements) once more.
    outs = []
    for time_step in range(r_out.size(1)):
        outs.append(F.linear(r_out[:, time_step, :], w, b))
    return torch.stack(outs, dim=1)


def one_linear(r_out, w, b):
    # One (B·T, H)×(H, O) GEMM: the same 2·B·T·H·O flops in one launch, the output written once.
    return F.linear(r_out, w, b)


def linear_float64(r_out, w, b):
    return torch.einsum("bth,oh->bto", r_out.double(), w.double()) + b.double()


def check_lstm_head(device):
    """The notes' classifier as written: its LSTM, then `out = self.out(r_out[:,-1,:])` with the head
    nn.Linear(input_size, output_size), at the notes' INPUT_SIZE = TIME_STEP = 28 and a hidden size
    the notes leave open: 64, then 28 (= input_size)."""
    torch.manual_seed(0)
    x = torch.randn(2, TIME_STEP, INPUT_SIZE, device=device)
    seen = []
    for hidden in (64, INPUT_SIZE):
        net = notes_network(INPUT_SIZE, hidden, 10).to(device)
        with torch.no_grad():
            r_out, (h_n, h_c) = net.rnn(x, None)
            try:
                net.out(r_out[:, -1, :])
                error = ""
            except RuntimeError as exc:
                error = str(exc).splitlines()[0]
        seen.append((hidden, tuple(r_out.shape), error))
    return judge_lstm_head(seen)


def judge_lstm_head(seen: list[tuple]) -> Finding:
    """The notes: r_out is (batch, time_step, input_size), so the head is nn.Linear(input_size,
    output_size). `seen`: (hidden_size, r_out's shape, the head's error or "") per hidden size.
    Fails where, at a hidden size other than input_size, r_out's last axis is not input_size or
    the head raises; holds where r_out has input_size features and the head runs at every size."""
    wrong = [(h, shape, err) for h, shape, err in seen if shape[-1] != INPUT_SIZE or err]
    lines = "; ".join(
        f"hidden_size {h}: r_out {shape}, the head " + (f"raises ({err})" if err else "runs")
        for h, shape, err in seen
    )
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        f"input_size {INPUT_SIZE}: {lines}"
        + (
            "; r_out has hidden_size features (as the notes' own comment on hidden_size, 也是输出维度, "
            "says): nn.Linear(hidden_size, output_size) is the head that fits; the notes' runs only "
            "where hidden_size == input_size"
            if wrong
            else ""
        ),
    )


def check_notes_forward(device):
    """The notes' regression forward (`# 网络相同`: their LSTM network) carrying its state across
    three calls, at hidden_size = input_size = 28, where their head nn.Linear(input_size, ...)
    fits (`lstm_head` judges other sizes)."""
    torch.manual_seed(0)
    x = torch.randn(2, 5, INPUT_SIZE, device=device)
    net = notes_network(INPUT_SIZE, INPUT_SIZE, 1).to(device)
    with torch.no_grad():
        state, per_step_ok, same_state = None, True, True
        for _ in range(3):
            r_out, module_state = net.rnn(x, state)
            prediction, state = net(x, state)
            same_state = same_state and all(torch.equal(a, b) for a, b in zip(state, module_state))
            # Each side an fp32 dot product of H = 28 terms plus the bias: Higham's γ₂₉·(|W|·|h| + |b|)
            # each, elementwise, so twice that apart.
            terms = r_out.abs() @ net.out.weight.abs().T + net.out.bias.abs()
            per_step_ok = per_step_ok and bool(
                ((prediction - net.out(r_out)).abs() <= 2 * 29 * U[FP32] * terms).all()
            )
    shapes = [tuple(t.shape) for t in state] if isinstance(state, tuple) else [tuple(state.shape)]
    return judge_notes_forward(type(state).__name__, shapes, same_state, per_step_ok, (1, 2, INPUT_SIZE))


def judge_notes_forward(
    kind: str, shapes: list, same_state: bool, per_step_ok: bool, expected: tuple
) -> Finding:
    """The notes: the forward updates hidden_state and returns it with the per-step predictions,
    hidden_state (n_layers, batch, hidden_size). `kind`: the returned state's type (the LSTM's is a
    (h, c) tuple); `shapes`: each of its tensors'; `same_state`: it equals what the module itself
    returns for that input and state, call after call; `per_step_ok`: the predictions equal the head
    over every step. Holds when each state tensor is `expected` and both comparisons hold."""
    shaped = bool(shapes) and all(tuple(s) == tuple(expected) for s in shapes)
    holds = shaped and same_state and per_step_ok
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"the notes' forward returns a {kind} state of {len(shapes)} tensor(s) shaped {shapes} "
        f"({'each' if shaped else 'NOT each'} (n_layers, batch, hidden_size) = {tuple(expected)}), "
        + ("equal to" if same_state else "NOT equal to")
        + " the LSTM's own state over three calls, and per-step predictions "
        + ("equal to" if per_step_ok else "NOT equal to")
        + " the head over r_out"
        + (
            "; for the LSTM the state is the pair (h, c), which `h_state.data` cannot take "
            "(rnn.hidden_detach)"
            if kind == "tuple"
            else ""
        ),
    )


TIMESTEP_LOOP = Case(
    id="rnn.timestep_loop",
    tier=2,
    claim="The notes' regression head (a Linear per time step in a Python loop + torch.stack) equals "
    "one Linear over (batch, time, hidden), which is faster; the forward carries the hidden state.",
    source="000/001 RNN (回归)",
    make_inputs=make_rnn_output,
    variants={"loop": naive(per_step_loop, claim="per_step_head"), "one_linear": optimized(one_linear)},
    oracle=linear_float64,
    # One Linear over H features: ~u·√H of the terms' size on every output, near-zero
    # ones included: a floor of 2u·√H at the outputs' scale. bf16/fp16: fp32 accumulation, the
    # output rounded to the dtype (u, relative), 4u at the scale for the rounded hidden states.
    tolerance={
        FP32: lambda s: Tol(rtol=8 * U[FP32], floor=2 * U[FP32] * s["h"] ** 0.5),
        BF16: Tol(rtol=2 * U[BF16], floor=4 * U[BF16]),
        FP16: Tol(rtol=2 * U[FP16], floor=4 * U[FP16]),
    },
    dtypes={"cpu": (FP32,), "cuda": (FP32, BF16, FP16)},
    sizes={
        "quick": [{"t": t, "b": 16, "h": 64, "o": 32} for t in (16, 64, 256, 1024)],
        "full": [{"t": t, "b": 64, "h": 1024, "o": 1024} for t in (64, 256, 1024, 4096)],
    },
    claims=(
        Claim(
            "per_step_head",
            "for time_step in range(r_out.size(1)): … outs.append(self.out(r_out[:, time_step, :])) … "
            "it returns the prediction at each time step",
            "001",
            ClaimKind.CORRECTNESS,
            reading="the loop applying the head to r_out[:, t, :] for every t and stacking along dim 1 "
            "gives the head's prediction at each time step (the float64 truth: one Linear over r_out)",
        ),
        Claim(
            "forward_state",
            "r_out, hidden_state = self.rnn(x, hidden_state) # hidden_state 不断更新 … "
            "# hidden_state (n_layers, batch, hidden_size)",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="the notes' forward on their LSTM network returns the updated state, call after "
            "call, each of its tensors (n_layers, batch, hidden_size); run at hidden_size = input_size "
            "= 28, where the notes' head fits as written (`lstm_head` judges other hidden sizes)",
        ),
        Claim(
            "lstm_head",
            "self.out = nn.Linear(input_size, output_size) … "
            "out = self.out(r_out[:,-1,:]) # r_out (batch, time_step, input_size)",
            "001",
            ClaimKind.CORRECTNESS,
            reading="the LSTM's r_out has input_size features, so the head nn.Linear(input_size, "
            "output_size) takes its last step, whatever the hidden size",
        ),
    ),
    checks={
        "notes_forward": Check(check_notes_forward, claim="forward_state"),
        "lstm_head": Check(check_lstm_head, claim="lstm_head"),
    },
    # One Linear over (B, T, H) against the loop: the catalogue's better way, timed as context (the
    # notes promise no speed).
    verdict=AllOf((Faster("one_linear", "loop"), FromFindings())),
    flops=lambda s: 2 * s["b"] * s["t"] * s["h"] * s["o"],
    x="t",
)
