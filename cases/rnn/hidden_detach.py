"""`rnn.hidden_detach` (notes 000/001 "RNN"): the hidden state returned by step k is the output of
step k's graph. Fed into step k+1 as is, step k+1's backward walks into step k's graph, whose buffers
the previous backward freed: it raises. `retain_graph=True` silences that and turns training into
full BPTT over the whole history: step k's backward walks k chunks (time ∝ k) and every chunk's
saved activations stay alive (memory ∝ k). `.detach()` and `.data` both cut the graph; only
`.detach()` shares the version counter, so an in-place change of the carried state is caught by
autograd instead of silently corrupting the gradient.
"""

from __future__ import annotations

import itertools
import time

import torch
import torch.nn.functional as F
from torch import nn

from cases._lib.inputs import generator
from cases._lib.notes_rnn import INPUT_SIZE, TRAIN_LOOP, notes_network, randn
from cases._lib.precision import ieee_fp32
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
from harness import measure
from harness.contract.rules import AllOf, Faster, FromFindings, Lighter
from harness.measure import device as harness_device
from notes import parse

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16


CHUNK = 8  # time steps per training step (the truncation length)


class Regressor(nn.Module):
    """A stand-in for the notes' LSTM regression net: an nn.RNN (a tensor state, which `.data` can
    take) and a Linear head on every time step, timed and checked against a float64 Elman cell."""

    def __init__(self, inputs, hidden, generator):
        super().__init__()
        self.rnn = nn.RNN(inputs, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 1)
        with torch.no_grad():
            for p in self.parameters():
                # Drawn where the generator lives (the inputs' device), in the inputs' stream.
                p.copy_(torch.randn(p.shape, generator=generator, device=generator.device) * hidden**-0.5)


def _make_training(size, dtype, device, seed, mode):
    g = generator(device, seed)
    b, h, steps = size["b"], size["h"], size["steps"]
    net = Regressor(size["i"], h, g).to(device=device, dtype=dtype)
    xs = randn((steps, b, CHUNK, size["i"]), g, dtype, device)
    ys = randn((steps, b, CHUNK, 1), g, dtype, device)
    h0 = randn((1, b, h), g, dtype, device, scale=0.5)
    return net, xs, ys, h0, mode


def make_truncated(size, dtype, device, seed):
    return _make_training(size, dtype, device, seed, "truncated")


def make_full(size, dtype, device, seed):
    return _make_training(size, dtype, device, seed, "full")


def _train(net, xs, ys, h0, carry, retain_graph=False):
    """The notes' loop: forward a chunk from the carried state, backward its loss, carry the state.
    Returns every prediction, the final state and the accumulated gradients (no optimizer step:
    with one, `retain_graph` fails outright, see `no_detach_errors`)."""
    for p in net.parameters():
        p.grad = None
    h, preds = h0, []
    for x, y in zip(xs, ys):
        out, h = net.rnn(x, h)
        pred = net.out(out)
        F.mse_loss(pred, y).backward(retain_graph=retain_graph)
        h = carry(h)
        preds.append(pred.detach())
    return (torch.stack(preds), h.detach(), *(p.grad.clone() for p in net.parameters()))


def retained(net, xs, ys, h0, mode):
    # Step k's backward walks all k chunks: Σ k = n(n+1)/2 chunk-backwards for n steps, and the
    # saved activations of every chunk (≈ CHUNK·B·H per tensor saved) stay alive to the end.
    return _train(net, xs, ys, h0, carry=lambda h: h, retain_graph=True)


def detached(net, xs, ys, h0, mode):
    # n chunk-backwards; only the current chunk's graph is alive.
    return _train(net, xs, ys, h0, carry=lambda h: h.detach())


def dot_data(net, xs, ys, h0, mode):
    return _train(net, xs, ys, h0, carry=lambda h: h.data)


def _cell_float64(w_ih, w_hh, b_ih, b_hh, x, h):
    """An Elman cell written out in float64 (not nn.RNN's kernel):
    h_t = tanh(W_ih x_t + b_ih + W_hh h + b_hh)."""
    outs = []
    for t in range(x.shape[1]):
        h = torch.tanh(x[:, t].double() @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
        outs.append(h)
    return torch.stack(outs, 1), h


def training_float64(net, xs, ys, h0, mode):
    """The truth in float64 on a hand-written cell. Truncated BPTT: Σ_k ∂L_k/∂θ with each chunk
    starting from a constant state. Full (what retain_graph accumulates): Σ_k ∂L_k/∂θ through all
    earlier chunks, which is ∂(Σ_k L_k)/∂θ of the unrolled sequence, one backward."""
    named = {n: p.detach().double().requires_grad_() for n, p in net.named_parameters()}
    params = list(named.values())  # in net.parameters() order, as the variants return the grads
    cell = [named[f"rnn.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    w_out, b_out = named["out.weight"], named["out.bias"]
    h = h0[0].double()
    preds, total, grads = [], 0.0, [torch.zeros_like(p) for p in params]
    for x, y in zip(xs, ys):
        if mode == "truncated":
            h = h.detach()
        out, h = _cell_float64(*cell, x, h)
        pred = out @ w_out.T + b_out
        loss = ((pred - y.double()) ** 2).mean()
        if mode == "truncated":
            for acc, gr in zip(grads, torch.autograd.grad(loss, params, retain_graph=False)):
                acc += gr
        else:
            total = total + loss
        preds.append(pred.detach())
    if mode == "full":
        grads = torch.autograd.grad(total, params)
    return (torch.stack(preds), h.detach()[None], *grads)


def _graph_nodes(tensor):
    """Autograd nodes reachable from `tensor`: the size of the graph a backward would walk."""
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return len(seen)


def check_no_detach_errors(device):
    """The notes' loop on their network (LSTM, hidden_size = input_size = 28 so that their head fits)
    with a backward per step and no cut: the second step's backward walks into the first step's
    freed graph. With `retain_graph=True` and an optimizer step the weights the retained graph
    saved were updated in place: autograd's version check raises where the kernel saved them."""
    torch.manual_seed(0)
    net = notes_network(INPUT_SIZE, INPUT_SIZE, 1).to(device)
    xs = torch.randn(3, 4, CHUNK, INPUT_SIZE, device=device)
    ys = torch.randn(3, 4, CHUNK, 1, device=device)
    h, plain = None, None
    try:
        for step, (x, y) in enumerate(zip(xs, ys)):
            prediction, h = net(x, h)
            F.mse_loss(prediction, y).backward()
    except RuntimeError as exc:
        plain = (step + 1, str(exc).split(".")[0])
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    h = None
    try:
        for step, (x, y) in enumerate(zip(xs, ys)):
            prediction, h = net(x, h)
            opt.zero_grad()
            F.mse_loss(prediction, y).backward(retain_graph=True)
            opt.step()
        # Whether the LSTM kernel's saved weights are version-checked is the kernel's business
        # (cuDNN keeps its own flat weight buffer): reported either way.
        retained = "ran without error (the gradients mix stale weights)"
    except RuntimeError as exc:
        retained = f"step {step + 1} raises '{str(exc).split(':')[0]}'"
    return judge_no_detach(plain, retained)


def judge_no_detach(plain: tuple[int, str] | None, retained: str) -> Finding:
    """The notes' "!! next step is important !!": without cutting the carried state, the second
    step's backward walks into the first step's freed graph and raises. What retain_graph plus an
    optimizer step does instead depends on the kernel: reported, deciding nothing."""
    raised = plain is not None and plain[0] == 2 and "second time" in plain[1]
    return Finding(
        Verdict.HOLDS if raised else Verdict.FAILS,
        "the notes' LSTM network without cutting the hidden state: plain: "
        + (f"step {plain[0]} raises '{plain[1]}'" if plain else "NO step raised")
        + f"; retain_graph=True + SGD: {retained}",
    )


def check_notes_train_loop(device):
    """The notes' train snippet from the note file, run on their network (`rnn`, LSTM, hidden_size =
    input_size = 28) and an input `x` (both never defined in the notes); then the same cut made per
    tensor of the LSTM's (h, c), and `.data` on the case's nn.RNN stand-in, against `.detach()`."""
    torch.manual_seed(0)
    x = torch.randn(2, 5, INPUT_SIZE, device=device)
    net = notes_network(INPUT_SIZE, INPUT_SIZE, 1).to(device)
    code = parse.snippet_text(TRAIN_LOOP)
    try:
        exec(code, {"rnn": net, "x": x})  # noqa: S102 - the notes' own text
        notes_error = ""
    except AttributeError as exc:
        notes_error = str(exc)

    def carried_grads(cut):
        """Two steps with a backward each, the state carried with `cut`: the gradients, or the
        error of the second backward."""
        h_state = None
        for p in net.parameters():
            p.grad = None
        try:
            for _ in range(2):
                prediction, h_state = net(x, h_state)
                prediction.sum().backward()
                h_state = cut(h_state)
        except RuntimeError as exc:
            return str(exc).split(".")[0]
        return [p.grad.clone() for p in net.parameters()]

    by_data = carried_grads(lambda hc: tuple(t.data for t in hc))
    by_detach = carried_grads(lambda hc: tuple(t.detach() for t in hc))
    per_tensor = (
        not isinstance(by_data, str)
        and all(torch.equal(a, b) for a, b in zip(by_data, by_detach))
        and not isinstance(by_detach, str)
    )
    inputs = make_truncated({"steps": 4, "b": 4, "h": 16, "i": 3}, FP32, device, 0)
    stand_in = all(torch.equal(a, b) for a, b in zip(detached(*inputs), dot_data(*inputs)))
    return judge_notes_train_loop(notes_error, per_tensor, stand_in)


def judge_notes_train_loop(notes_error: str, per_tensor_cut: bool, stand_in_cut: bool) -> Finding:
    """The notes: `h_state = h_state.data` repacks the hidden state and breaks the connection to the
    last iteration. Judged on their network: fails where their loop raises there (an LSTM returns
    the pair (h, c), which has no `.data`) or the cut does not match `.detach()`'s; holds where the
    loop runs and `.data` cuts as `.detach()` does. `per_tensor_cut`: on the LSTM, `.data` per tensor
    of (h, c) gives `.detach()`'s gradients bit for bit; `stand_in_cut`: on the case's nn.RNN (a
    tensor state), `h.data` gives `.detach()`'s truncated BPTT bit for bit."""
    holds = not notes_error and per_tensor_cut
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        (
            f"as written on the notes' LSTM the loop raises at `h_state = h_state.data` ({notes_error}): "
            "the state is the pair (h, c)"
            if notes_error
            else "as written on the notes' network the loop runs"
        )
        + "; `.data` per tensor of (h, c) "
        + ("gives" if per_tensor_cut else "does NOT give")
        + " `.detach()`'s gradients bit for bit (use `h_state = tuple(t.detach() for t in h_state)`)"
        + "; on a tensor state (nn.RNN, the case's timed stand-in) `h.data` "
        + ("cuts as `.detach()` does" if stand_in_cut else "does NOT cut as `.detach()` does"),
    )


def _step_curves(net, xs, ys, h0, carry, retain_graph, device):
    """Per training step: backward time (ms), graph nodes walked, and live bytes after the step
    (CUDA: the allocator; CPU: the profiler's allocation events replayed up to each step's end)."""
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity

    def run(timed, marked):
        h, ms, nodes = h0, [], []
        for k, (x, y) in enumerate(zip(xs, ys)):
            with record_function(f"train_step_{k}") if marked else _null():
                out, h = net.rnn(x, h)
                loss = F.mse_loss(net.out(out), y)
                nodes.append(_graph_nodes(loss))
                measure.synchronize(device)
                t0 = time.perf_counter()
                loss.backward(retain_graph=retain_graph)
                measure.synchronize(device)
                ms.append(1e3 * (time.perf_counter() - t0))
                h = carry(h)
                del out, loss
                if timed and device.type == "cuda":
                    live.append(harness_device.of(device).memory_allocated() - base)
        return h, ms, nodes

    live = []
    if device.type == "cuda":
        base = harness_device.of(device).memory_allocated()
        h, ms, nodes = run(True, False)
        del h
        return ms, nodes, live
    _, ms, nodes = run(True, False)
    with measure.profiled(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        h, _, _ = run(False, True)
    events = list(prof.profiler.kineto_results.events())
    ends = sorted(e.end_ns() for e in events if e.name().startswith("train_step_"))
    allocs = sorted(
        (e.start_ns(), e.nbytes())
        for e in events
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    )
    total, i = 0, 0
    for end in ends:
        while i < len(allocs) and allocs[i][0] <= end:
            total += allocs[i][1]
            i += 1
        live.append(total)
    del h
    return ms, nodes, live


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def check_growth_curves(device):
    """Failure mode 2, measured step by step: with retain_graph the graph walked and the live
    memory grow linearly with the step (counted, exact) and so does the backward time (timed,
    reported); with detach they stay flat."""
    steps = 24
    size = {"steps": steps, "b": 8, "h": 64, "i": 4}
    curves = {}
    for name, carry, retain in (("retain_graph", lambda h: h, True), ("detach", lambda h: h.detach(), False)):
        net, xs, ys, h0, _ = make_truncated(size, FP32, device, 0)
        curves[name] = _step_curves(net, xs, ys, h0, carry, retain, device)
    (r_ms, r_nodes, r_live), (d_ms, d_nodes, d_live) = curves["retain_graph"], curves["detach"]
    # Memory: the retained run gains ≈ one chunk's saved activations per step; detach gains none
    # after the first steps (the allocator-free CPU count is exact; allow one chunk of slack).
    r_gain, d_gain = r_live[-1] - r_live[steps // 4], d_live[-1] - d_live[steps // 4]
    per_step = r_gain / (steps - 1 - steps // 4)

    def med(xs):
        return sorted(xs)[len(xs) // 2]

    # Reported, not judged: a wall-clock ratio of single backwards moves with the machine's load
    # (one busy run measured 0.0); the node and byte counts are the exact evidence. Medians of 4
    # resist load spikes.
    r_ratio, d_ratio = med(r_ms[-4:]) / med(r_ms[:4]), med(d_ms[-4:]) / med(d_ms[:4])
    sample = list(range(0, steps, 4)) + [steps - 1]

    def fmt(xs, f):
        return "[" + ", ".join(f(xs[k]) for k in sample) + "]"

    def kib(b):
        return f"{b / 1024:.0f}"

    def ms(t):
        return f"{t:.2f}"

    detail = (
        f"steps {[k + 1 for k in sample]}: backward ms retain_graph {fmt(r_ms, ms)} vs detach "
        f"{fmt(d_ms, ms)} (last/first ×{r_ratio:.1f} vs ×{d_ratio:.1f}); graph nodes {fmt(r_nodes, str)} vs "
        f"{fmt(d_nodes, str)}; live KiB {fmt(r_live, kib)} vs {fmt(d_live, kib)} (+{per_step / 1024:.1f} KiB "
        "per step retained)"
    )
    return judge_growth(r_nodes, d_nodes, per_step, d_gain, detail)


def judge_growth(
    r_nodes: list[int], d_nodes: list[int], per_step: float, d_gain: float, detail: str
) -> Finding:
    """With retain_graph the graph each backward walks grows by the same number of nodes every
    step and the live memory by about one chunk's activations; cut with detach both stay flat
    (its live bytes gain less than one retained step's over the run)."""
    growth = {b - a for a, b in itertools.pairwise(r_nodes)}
    linear = len(growth) == 1 and min(growth) > 0
    flat = d_nodes[-1] == d_nodes[0]
    memory = per_step > 0 and abs(d_gain) < per_step
    wrong = [
        what
        for what, ok in (
            ("the retained graph did not grow linearly", linear),
            ("the detached graph grew", flat),
            ("live memory did not grow with retain_graph alone", memory),
        )
        if not ok
    ]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS, (f"{'; '.join(wrong)}: " if wrong else "") + detail
    )


def check_data_bypasses_version_counter(device):
    """`.data` and `.detach()` cut the graph identically, but an in-place change of the carried state
    (e.g. `h.zero_()` at an episode boundary) before the backward that still needs it: `.detach()`
    shares the version counter and autograd raises; `.data` does not, and the gradient is wrong."""
    inputs = make_truncated({"steps": 4, "b": 4, "h": 16, "i": 3}, FP32, device, 0)
    same = all(torch.equal(a, b) for a, b in zip(detached(*inputs), dot_data(*inputs)))
    g = torch.Generator().manual_seed(0)
    x, w, u, h0, c = (
        torch.randn(s, generator=g).to(device) for s in ((4, 3), (3, 6), (6, 6), (4, 6), (4, 6))
    )
    truth_w = None
    results = {}
    for name in ("reference", "detach", "data"):
        wl = w.clone().requires_grad_()
        h1 = torch.tanh(x @ wl + h0 @ u)  # tanh saves its output h1 for backward
        loss = (h1 * c).sum()
        if name != "reference":
            carried = h1.detach() if name == "detach" else h1.data
            carried.zero_()  # reset the state for the next sequence
        try:
            loss.backward()
            results[name] = wl.grad
        except RuntimeError as exc:
            results[name] = str(exc).split(":")[0]
        if name == "reference":
            truth_w = wl.grad
    x64, w64 = x.double(), w.double().requires_grad_()
    (torch.tanh(x64 @ w64 + h0.double() @ u.double()) * c.double()).sum().backward()
    # The suite's own truth: the untouched fp32 graph against float64. Reductions of 3 and 6 terms
    # into one tanh, then a batch sum of 4: ~u·√terms of the terms' scale (≈ max|grad|) each, a floor
    # of 2u·(√3 + √6 + √4) = 12u of max|grad|, and 8u relative for the last roundings.
    own_tol = Tol(rtol=8 * U[FP32], floor=2 * U[FP32] * (3**0.5 + 6**0.5 + 2))
    own = measure.within_tol(truth_w.double(), w64.grad, own_tol)
    assert own.within, f"the untouched fp32 gradient is off float64: {own.worst}"

    def outcome(r):
        """The error's text where backward raised, else the gradient's max error vs float64."""
        return r if isinstance(r, str) else (r.double() - w64.grad).abs().max().item()

    return judge_data_vs_detach(same, outcome(results["data"]), outcome(results["detach"]))


def judge_data_vs_detach(
    same: bool, data_after_reset: float | str, detach_after_reset: float | str = ""
) -> Finding:
    """Context on the case's nn.RNN stand-in, deciding nothing (the notes' claim is
    `notes_train_loop`'s, on their LSTM): `h.data` and `.detach()` cut the graph alike (`same`:
    bitwise-identical truncated BPTT), and after an in-place reset of the carried state before
    backward, a use the notes never show, what each does (a gradient and its error, or
    autograd's version-counter error)."""

    def said(after):
        if isinstance(after, str):
            return f"raises ('{after}')" if after else "raises autograd's version-counter error"
        return f"returns a gradient off by {after:.3g} (max abs vs float64) with no error"

    return Finding(
        None,
        "on nn.RNN (a tensor state) `h.data` and `h.detach()` cut the graph "
        + (
            "the same way (bitwise-identical truncated-BPTT predictions and gradients)"
            if same
            else "DIFFERENTLY"
        )
        + "; beyond the notes: after an in-place reset of the carried state before backward, `.detach()` "
        f"{said(detach_after_reset)} while `.data` {said(data_after_reset)}",
    )


HIDDEN_DETACH = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="rnn.hidden_detach",
    tier=2,
    claim="Carrying the hidden state with `h_state = h_state.data` breaks the graph between steps "
    "(truncated BPTT); without it the second backward fails or, with retain_graph, time and memory "
    "grow every step.",
    source="000/001 RNN (train)",
    make_inputs=make_truncated,
    variants={
        # The same loop without a cut: full BPTT over the history, so its truth is different.
        "retain_graph": naive(ieee_fp32(retained), inputs=make_full),
        "detach": optimized(ieee_fp32(detached)),
        # `.data` on nn.RNN's tensor state: a stand-in for the notes' LSTM, whose (h, c) has no
        # `.data` (`notes_train_loop` decides the claim): timed as context.
        "data": optimized(ieee_fp32(dot_data)),
    },
    oracle=training_float64,
    # Each chunk's gradients come from GEMMs over K = max(H, B·CHUNK) terms, ~u·√K of the
    # terms' size on every entry (2u·√K); summed over up to 128 chunks and back through 8
    # (truncated) or all (full BPTT) tanh steps, which tanh' < 1 damps: ×2 (measured ≤ 19u at
    # 128 steps, B = 64, H = 512, against 4u·√512 = 90u), a floor at each gradient's own scale.
    tolerance={FP32: lambda s: Tol(rtol=8 * U[FP32], floor=4 * U[FP32] * max(s["h"], s["b"] * CHUNK) ** 0.5)},
    dtypes={"cpu": (FP32,), "cuda": (FP32,)},
    sizes={
        "quick": [{"steps": n, "b": 8, "h": 32, "i": 4} for n in (4, 10, 24)],
        "full": [{"steps": n, "b": 64, "h": 512, "i": 64} for n in (16, 32, 64, 128)],
    },
    claims=(
        Claim(
            "data_cuts_graph",
            "h_state = h_state.data # repack the hidden state, break the connection from last iteration",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="in the notes' train loop on their network (an LSTM: '网络相同'; hidden_size = "
            "input_size = 28, where its head fits), `h_state = h_state.data` carries the state into "
            "the next step cut from the last one's graph",
        ),
        Claim(
            "cut_needed",
            "# !! next step is important !!",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="without the cut on the next line, training the notes' LSTM network step after "
            "step breaks: the second backward walks into the first step's freed graph",
        ),
    ),
    checks={
        "no_detach_errors": Check(check_no_detach_errors, claim="cut_needed"),
        "notes_train_loop": Check(check_notes_train_loop, claim="data_cuts_graph"),
        # What retain_graph costs instead (graph nodes and live bytes per step, exact): the
        # catalogue's measurement on the nn.RNN stand-in, context.
        "growth_curves": Check(check_growth_curves),
        # `.data` against `.detach()` on the nn.RNN stand-in, and after an in-place reset: context.
        "data_bypasses_version_counter": Check(check_data_bypasses_version_counter),
    },
    # detach against retain_graph, in time and memory: the catalogue's comparison, context (the
    # notes time nothing); the deterministic checks above decide the notes' claims.
    verdict=AllOf((Faster("detach", "retain_graph"), Lighter("detach", "retain_graph"), FromFindings())),
    x="steps",
)
