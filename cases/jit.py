"""TorchScript: torch.jit.trace vs torch.jit.script on control flow, vs eager
(notes 000/001 Jit Script, 003 torchscript).

The model is the notes' own: an RNN loop whose cell has a data-dependent gate
(`x if x.sum() > 0 else -x`). `trace` runs the model once on an example and records the ops that
ran: the loop is unrolled to the example's length and each step's branch is frozen to the one the
example took. `script` compiles the Python source, so the `if` and the loop stay in the graph.

torch 2.13 deprecates the TorchScript API the notes call (`script`, `trace`, `load` each raise a
DeprecationWarning pointing to torch.compile / torch.export; later versions a FutureWarning).
Models are built under a local `warnings.catch_warnings()`, so a suite run with warnings-as-errors
elsewhere is not affected; `deprecation` records what this torch version says. torch.compile's
time (the first call compiles, ~15 s on 2 CPU cores) is measured apart from the steady state by
the `compile_time` check, marked slow so that it stays out of the quick run.
"""

from __future__ import annotations

import copy
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from cases._lib.inputs import generator
from cases._lib.timing import best_time
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    Tol,
    Verdict,
    library,
    naive,
    optimized,
)
from harness import measure
from harness.contract.rules import FromFindings
from notes import parse
from notes.deprecation import is_deprecation

FP32 = torch.float32


class DecisionGate(nn.Module):
    def forward(self, x):
        return x if x.sum() > 0 else -x


class Cell(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.dg = DecisionGate()
        self.linear = nn.Linear(hidden, hidden)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class RNNLoop(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.cell = Cell(hidden)

    def forward(self, xs):
        h = torch.zeros_like(xs[0])
        y = h
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


def quietly(fn, *args, **kwargs):
    """Call a TorchScript API with its DeprecationWarning/TracerWarning kept local; returns the
    result and the warnings it raised (so a check can report them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return result, caught


@dataclass(eq=False)
class Models:
    eager: nn.Module
    scripted: torch.jit.ScriptModule
    traced: torch.jit.ScriptModule


def make_sequence(size, dtype, device, seed):
    """A (T, B, H) sequence and the three forms of one seeded model; the traced one is traced on
    this very sequence (each step's branch frozen to the one it takes here)."""
    g = generator(device, seed)
    xs = torch.randn(size["t"], size["b"], size["h"], generator=g, device=device).to(dtype)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        eager = RNNLoop(size["h"])
    eager = eager.to(device=device, dtype=dtype).eval()
    scripted, _ = quietly(torch.jit.script, copy.deepcopy(eager))
    traced, _ = quietly(torch.jit.trace, copy.deepcopy(eager), (xs,))
    return xs, Models(eager, scripted, traced)


@torch.no_grad()
def run_eager(xs, models):
    return models.eager(xs)


@torch.no_grad()
def run_scripted(xs, models):
    return models.scripted(xs)


@torch.no_grad()
def run_traced(xs, models):
    return models.traced(xs)


def _tolerance(size, factor: float = 1.0) -> Tol:
    """The case's bound on a sequence's outputs (derived at CASE.tolerance); factor 2 holds two fp32
    results to each other."""
    return Tol(rtol=8 * factor * U[FP32], floor=4 * factor * U[FP32] * size["h"] ** 0.5)


@torch.no_grad()
def eager_float64(xs, models):
    """The truth: the eager Python model, in float64."""
    return copy.deepcopy(models.eager).double()(xs.double())


# ---- checks --------------------------------------------------------------------------------------


def _gate_inputs(device):
    g = torch.Generator().manual_seed(11)
    x = torch.rand(3, 4, generator=g).to(device) + 0.1  # sum > 0: the `x` branch
    return x, -x  # sum < 0: the `-x` branch


def check_trace_freezes_branch(device):
    """Traced on a positive-sum input, the gate returns x for a negative-sum input too (where
    eager returns -x); scripted keeps the `if`."""
    pos, neg = _gate_inputs(device)
    gate = DecisionGate()
    traced, caught = quietly(torch.jit.trace, gate, (pos,))
    scripted, _ = quietly(torch.jit.script, gate)
    tracer_warned = sum(isinstance(w.message, torch.jit.TracerWarning) for w in caught)
    # The gate returns x or −x, no arithmetic: exact on each path.
    script_err = max((scripted(x) - gate(x)).abs().max().item() for x in (pos, neg))
    own = (traced(pos) - gate(pos)).abs().max().item()
    wrong = (traced(neg) - gate(neg)).abs().max().item()
    return judge_trace_freezes_branch(
        wrong, own, script_err, "if" in scripted.code, "if" in traced.code, tracer_warned
    )


def judge_trace_freezes_branch(
    traced_other: float, traced_own: float, script_err: float, script_if: bool, traced_if: bool, warned: int
) -> Finding:
    """The notes: trace records only what the example ran, so with a branch the traced model need
    not equal the original; script compiles the code and keeps the branch. Holds when the traced
    gate is exact on its own example and wrong on the other branch (no `if` in its graph), and the
    scripted gate is exact on both (its `if` kept); anything else fails."""
    held = traced_own == 0 and traced_other > 0 and not traced_if and script_err == 0 and script_if
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"traced on sum>0: off by {traced_own:.3g} on its own example, by {traced_other:.3g} for sum<0 "
        f"(`if` in its graph: {traced_if}); scripted off by {script_err:.3g} on both branches (`if` kept: "
        f"{script_if}); trace emitted {warned} TracerWarning(s)",
    )


def check_save_load_round_trip(device):
    """Scripted and traced models saved to a file and loaded back compute what they did before,
    and the loaded scripted model still branches."""
    size = {"t": 6, "b": 3, "h": 4}
    xs, models = make_sequence(size, FP32, device, seed=3)
    others = [-xs, xs * 2]
    # The saved graph with its saved weights runs the same kernels: exact (round_trip: name → the
    # largest difference, loaded vs before saving).
    round_trip = {}
    with tempfile.TemporaryDirectory() as d:
        for name in ("scripted", "traced"):
            path = Path(d) / f"{name}.pt"
            quietly(getattr(models, name).save, str(path))  # the notes' `scripted.save("yy.pt")`
            loaded, _ = quietly(torch.jit.load, str(path), map_location=device)
            round_trip[name] = max(
                (a - b).abs().max().item()
                for x in [xs, *others]
                for a, b in zip(loaded(x), getattr(models, name)(x))
            )
        loaded, _ = quietly(torch.jit.load, str(Path(d) / "scripted.pt"), map_location=device)
        resaved, _ = quietly(loaded.save_to_buffer)
    truth = [models.eager(x) for x in others]
    traced_err = max(
        (a - b).abs().max().item() for x, t in zip(others, truth) for a, b in zip(models.traced(x), t)
    )
    # Scripted and eager are each within the case's bound of float64 (derived at CASE.tolerance):
    # twice it apart. A wrong branch is off by 2|z|, O(1).
    bound = _tolerance(size, factor=2)
    checks = [measure.within_tol(a, b, bound) for x, t in zip(others, truth) for a, b in zip(loaded(x), t)]
    scripted_ok = all(c.within for c in checks)
    worst = next((c.worst for c in checks if not c.within), "")
    return judge_save_load(round_trip, scripted_ok, worst, traced_err, len(resaved))


def judge_save_load(
    round_trip: dict[str, float], scripted_matches_eager: bool, worst: str, traced_err: float, nbytes: int
) -> Finding:
    """The notes: a TorchScript model is saved (`scripted.save`) and loaded back (`torch.jit.load`)
    to be run elsewhere. Holds when every saved model computes exactly what it did before saving
    and the loaded scripted one still equals eager on inputs other than the trace example (within
    twice the case's bound); the loaded traced one's error there is context (trace's frozen branch)."""
    exact = bool(round_trip) and all(e == 0 for e in round_trip.values())
    held = exact and scripted_matches_eager
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        "ScriptModule.save / torch.jit.load round trip, largest change: "
        + ", ".join(f"{n} {e:.3g}" for n, e in round_trip.items())
        + f" ({nbytes} bytes scripted, re-saved); on inputs other than the trace example the loaded "
        f"scripted model {'matches eager' if scripted_matches_eager else f'DIFFERS from eager ({worst})'}, "
        f"the loaded traced one is off by up to {traced_err:.3g}",
    )


def check_compile_time(device):
    """torch.compile of the eager model: its first call (the compile) timed apart from the steady
    state of eager, scripted and compiled, and the compiled model right on both branches."""
    xs, models = make_sequence({"t": 16, "b": 16, "h": 64}, FP32, device, seed=0)
    torch._dynamo.reset()
    compiled = torch.compile(models.eager)
    with torch.no_grad():
        t0 = time.perf_counter()
        first = compiled(xs)
        if device.type == "cuda":
            measure.synchronize(device)
        compile_s = time.perf_counter() - t0
        # Within fp32 rounding of a T=16 recurrence of width 64 (the assert_close defaults' scale).
        right = {
            "the branch its first call took": _close(first, models.eager(xs)),
            # The data-dependent `if` is a graph break, not a frozen branch: the other branch is right.
            "the other branch": _close(compiled(-xs), models.eager(-xs)),
        }
        steady = {
            "eager": best_time(lambda: models.eager(xs), device),
            "scripted": best_time(lambda: models.scripted(xs), device),
            "compiled": best_time(lambda: compiled(xs), device),
        }
    return judge_compile_time(compile_s, steady, right, device.type)


def _close(got, want) -> bool:
    return all(torch.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(got, want))


def judge_compile_time(compile_s: float, steady: dict, right: dict, device: str) -> Finding:
    """Context (the notes never mention torch.compile): the compile's cost and the steady state
    beside eager and script, reported; a compiled model wrong on a branch is said plainly."""
    wrong = [where for where, ok in right.items() if not ok]
    return Finding(
        None,
        f"torch.compile first call {compile_s:.1f} s on {device}; steady state (fastest of 5, T=16): "
        + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in steady.items())
        + (
            f"; compiled DIFFERS from eager on {' and '.join(wrong)}"
            if wrong
            else "; compiled is right on the branch the first call did not take "
            "(graph break, not a frozen branch)"
        ),
    )


# The TorchScript calls the notes make, heard one by one.
JIT_APIS = ("torch.jit.script", "torch.jit.trace", "ScriptModule.save", "torch.jit.load")
# Where a deprecated call is the notes' own words that no other check reports: 003's first
# torchscript snippet (003#6) is never run (it needs `input_example`); the calls in 003#2 (load and
# save) and 003#7 (the nested example) are run by `notes_snippets` of state.save_load and of this
# ID, whose errata name them. api → the notes' words in 003#6.
NOTES_CALLS = {
    "torch.jit.script": "scripted_model = torch.jit.script(my_model)",
    "torch.jit.trace": "traced_model = torch.jit.trace(my_model, input_example)",
}


def check_deprecation(device):
    """What this torch says about the TorchScript calls the notes make for C++ deployment; the
    warnings stay inside `quietly` even when warnings are errors."""
    gate = DecisionGate()
    x, _ = _gate_inputs(device)
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as d:
        warnings.simplefilter("error")  # as a strict suite would run: nothing may escape
        path = str(Path(d) / "yy.pt")
        scripted, w1 = quietly(torch.jit.script, gate)
        _, w2 = quietly(torch.jit.trace, gate, (x,))
        _, w3 = quietly(scripted.save, path)
        _, w4 = quietly(torch.jit.load, path)
    deprecated, messages = [], {}
    for api, caught in zip(JIT_APIS, (w1, w2, w3, w4)):
        own = [str(w.message) for w in caught if is_deprecation(w.category, str(w.message))]
        if own:
            deprecated.append(api)
            # trace also warns for the trace_method it calls: the message naming the API itself.
            short = api.rsplit(".", 1)[-1]
            messages[api] = next((m for m in own if f"`{api}`" in m or f".{short}`" in m), own[0])
    return judge_deprecation(deprecated, messages, torch.__version__)


def judge_deprecation(deprecated: list[str], message: str | dict[str, str], version: str) -> Finding:
    """A deprecated API is an erratum of the notes, the same kind in every ID, on the notes' own call
    of it that no snippet run reports (`NOTES_CALLS`); whether the notes' TorchScript route works is
    judged by the other checks (no verdict here). `message`: each API's own warning (api →
    message), or one message for all."""

    def said(api):
        return message.get(api, "") if isinstance(message, dict) else message

    errata = tuple(
        Erratum(ErratumKind.DEPRECATED_API, NOTES_CALLS[api], f"torch {version}: {api} warns {said(api)!r}")
        for api in deprecated
        if api in NOTES_CALLS
    )
    quiet = [api for api in JIT_APIS if api not in deprecated]
    return Finding(
        None,
        f"torch {version}: "
        + (
            f"{', '.join(deprecated)} deprecated; torch.export / torch.compile replace them"
            if deprecated
            else "the notes' TorchScript calls raise no deprecation warning"
        )
        + (f"; {', '.join(quiet)} without one" if deprecated and quiet else "")
        + "; the errata of the snippets that run (003#2, 003#7) name the calls there",
        errata,
    )


# 003's nested example, read from the note as written; its save and load go to the check's own
# folder instead of the working directory (the one repair: the path).
NOTES_NESTED = parse.snippet("003#7").source.replace("'wrapped_rnn.pt'", "PATH")


class NumpyStep(nn.Module):
    """A forward that calls NumPy: trace records the tensor ops around it; script cannot compile it."""

    def forward(self, x):
        return x * float(__import__("numpy").pi)


def check_notes_nested(device):
    """003's nested example run as written (CPU: the notes build it there): a scripted gate inside
    a traced cell inside a scripted loop, traced as a whole and saved. Loaded back, it must keep the
    loop (other lengths) and the gate's branch (negative sums), against the same modules run
    eagerly. (The notes' "script does not fully cover trace" is `check_script_coverage`.)"""
    import importlib.util
    import sys

    with tempfile.TemporaryDirectory() as d:
        # TorchScript compiles from source files: the snippet becomes a module of its own.
        source = Path(d) / "notes_nested_rnn.py"
        path = Path(d) / "wrapped_rnn.pt"
        source.write_text(f"import torch\nPATH = {str(path)!r}\n" + NOTES_NESTED)
        spec = importlib.util.spec_from_file_location("notes_nested_rnn", source)
        scope = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = scope
        try:
            torch.manual_seed(0)
            quietly(spec.loader.exec_module, scope)
        finally:
            del sys.modules[spec.name]
    loaded, traced = scope.loaded, scope.traced
    cell = traced.loop.cell  # WrapRNN builds its own MyRNNLoop, with weights of its own
    weight, bias = cell.linear.weight.detach(), cell.linear.bias.detach()
    g = torch.Generator().manual_seed(5)
    worst, keeps_branch = 0.0, "if" in traced.loop.cell.dg.code
    for length, sign in ((10, 1.0), (4, -1.0), (17, 1.0), (7, -1.0)):
        xs = sign * (torch.rand(length, 3, 4, generator=g) + 0.1)
        h = y = torch.zeros(3, 4)
        for i in range(length):  # the eager truth: the cell's own weights, the gate in Python
            z = torch.nn.functional.linear(xs[i], weight, bias)
            new_h = torch.tanh((z if z.sum() > 0 else -z) + h)
            y, h = new_h, new_h
        worst = max(worst, (loaded(xs) - torch.relu(y)).abs().max().item())
    return judge_notes_nested(worst, keeps_branch)


def judge_notes_nested(
    worst: float, keeps_branch: bool, script_failed: str | None = None, traced_ok: bool | None = None
) -> Finding:
    """The notes' nested example, saved and loaded: equal to eager and the gate's `if` kept.
    `script_failed`/`traced_ok` (optional): "script does not cover trace" judged with it, as before
    it became a claim of its own (`judge_script_coverage`)."""
    # The loaded model runs the very ops of the eager recomputation in the same order: bit-equal is
    # expected, and 4u of tanh's (−1, 1) range admits a fused-op rounding, not a wrong branch (2|z|).
    ok = worst <= 4 * U[FP32] and keeps_branch
    evidence = (
        f"the notes' nested example, saved and loaded: off by {worst:.2g} from eager on sequences of "
        f"4–17 steps with either sign (traced on 10 steps), the scripted gate "
        + ("keeps" if keeps_branch else "LOST")
        + " its `if`"
    )
    if script_failed is None and traced_ok is None:
        return Finding(Verdict.HOLDS if ok else Verdict.FAILS, evidence)
    covers = judge_script_coverage(script_failed or "", bool(traced_ok))
    return Finding(
        Verdict.HOLDS if ok and covers.verdict is Verdict.HOLDS else Verdict.FAILS,
        evidence + "; " + covers.evidence,
    )


def check_script_coverage(device):
    """The notes: "jit.script does not fully cover jit.trace". A forward that calls NumPy: trace
    records the tensor ops around it and the traced module computes what eager does; script has to
    compile the Python and cannot."""
    try:
        quietly(torch.jit.script, NumpyStep())
        script_failed = ""
    except Exception as exc:  # torch.jit.frontend's errors have no common base here
        script_failed = type(exc).__name__
    x = torch.ones(2, device=device)
    traced_ok = torch.equal(quietly(torch.jit.trace, NumpyStep(), (x,))[0](x), NumpyStep()(x))
    return judge_script_coverage(script_failed, traced_ok)


def judge_script_coverage(script_failed: str, traced_ok: bool) -> Finding:
    """Holds when a forward trace handles is refused by script (`script_failed`: the error's name;
    empty: script compiled it) and the traced module equals eager there."""
    covers = bool(script_failed) and traced_ok
    return Finding(
        Verdict.HOLDS if covers else Verdict.FAILS,
        "script does not cover trace: "
        + (
            f"a forward calling NumPy traces and scripting it raises {script_failed}"
            if covers
            else "NOT shown (script compiled a NumPy-calling forward, or trace failed it)"
        ),
    )


CASE = Case(
    id="jit.script_trace",
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("scripted", "eager"),),
    tier=2,
    claim="torch.jit.trace only records the ops run on the example input, so it is wrong on branches "
    "not taken; torch.jit.script keeps branches and loops; both save and load (TorchScript for C++ "
    "deployment).",
    source="000/001 Jit Script, 003 torchscript",
    make_inputs=make_sequence,
    variants={
        "eager": naive(run_eager),
        "scripted": optimized(run_scripted, claim="script_keeps_control_flow"),
        # Correct here only because it is traced on these very inputs; `trace_freezes_branch`
        # shows it on others.
        "traced": library(run_traced),
    },
    oracle=eager_float64,
    # Each step adds a Linear's error, ~u·√H of its terms, at the scale of h ∈ (−1, 1);
    # tanh' < 1 shrinks older errors every step, so they sum like a geometric series instead of
    # growing with T (measured: 8u at T = 1024, 19u at T = 256, H = 1024): 4u·√H at the scale.
    tolerance={FP32: _tolerance},
    sizes={
        "quick": [{"t": t, "b": 16, "h": 64} for t in (16, 64)],
        "full": [{"t": t, "b": 256, "h": 1024} for t in (64, 256, 1024)],
    },
    x="t",
    claims=(
        Claim(
            "trace_misses_branches",
            "其中`jit.trace`方法只能追踪`input_example`作为`my_model`的输入时所进行的所有运算过程, "
            "因此如果运算过程中存在分支或循环时, 不能保证得到的`traced_model`与原始的`my_model`完全一致",
            "003",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "script_keeps_control_flow",
            "而`jit.script`方法是通过分析`my_model`的代码来得到中间表示的，因此可以处理分支或者循环",
            "003",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "script_not_superset",
            "但这并不代表`jit.script`的功能完全覆盖了`jit.trace`",
            "003",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "save_load",
            "scripted = torch.jit.script(my_model) … scripted.save(\"yy.pt\") … torch.jit.load('yy.pt')",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="a scripted model saved with .save and loaded with torch.jit.load computes what it did",
        ),
        Claim(
            "nested",
            "`jit.trace`与`jit.script`嵌套，并将模型保存 … traced.save('wrapped_rnn.pt') … "
            "loaded = torch.jit.load('wrapped_rnn.pt')",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="the notes' nested trace/script example, saved and loaded, computes what the modules do "
            "eagerly",
        ),
    ),
    checks={
        "trace_freezes_branch": Check(check_trace_freezes_branch, claim="trace_misses_branches"),
        "save_load_round_trip": Check(check_save_load_round_trip, claim="save_load"),
        # The notes' API names against this torch: errata only (deprecated APIs), no verdict.
        "deprecation": Check(check_deprecation),
        "notes_nested": Check(check_notes_nested, devices=("cpu",), claim="nested"),
        "script_coverage": Check(check_script_coverage, devices=("cpu",), claim="script_not_superset"),
        # torch.compile beside TorchScript: the catalogue's context, timed, deciding nothing.
        "compile_time": Check(check_compile_time, requires=("compiler",), slow=True),
    },
    verdict=FromFindings(),
    flops=lambda s: 2 * s["t"] * s["b"] * s["h"] * s["h"],
)
