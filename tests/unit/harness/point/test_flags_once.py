"""Precision flags are set around the rounds, not inside each timed call (issue 37, item 2).

Saving, setting, restoring and verifying every fp32-precision flag costs ~110-170 µs on a CPU;
inside a variant's call it is timed with the computation (layout's matmul and conv3x3, every
conv.* variant, rnn, precision.tf32). A variant that needs flags carries its context
(`harness.measure.block_context.scoped`): called directly it still enters it on each call (a check gets
the right flags), while the harness calls the bare computation inside one entered context per
side and round block of a pair, once around a variant's timed rounds. Entries are counted by
`precision_flags.preserved`, which every such context goes through; the flags are checked restored
after.
"""

from __future__ import annotations

import functools

import pytest
import torch

from cases._lib.precision import ieee_fp32
from cases.precision import tf32
from cases.spec import Tol
from harness.contract import record
from harness.measure import block_context
from harness.measure import precision_flags as flags
from harness.point import variant_benchmark
from harness.point.pair_benchmark import PairAtPoint
from harness.point.pair_benchmark import run as run_pair

KEY = record.PointKey(
    case="precision.tf32",
    kind="pair",
    name="matmul.medium/matmul.highest",
    device="cpu",
    size={"n": 16},
    size_label="n16",
    dtype="float32",
)


@pytest.fixture
def entries(monkeypatch):
    """How many times a precision context was entered (each goes through `preserved`)."""
    count = {"n": 0}
    real = flags.preserved

    def counting():
        count["n"] += 1
        return real()

    monkeypatch.setattr(flags, "preserved", counting)
    return count


def _side(name, fn, inputs, truth, tol=Tol(rtol=2 * 2.0**-8, floor=4 * 2.0**-8)):
    return variant_benchmark.VariantAtPoint(
        id=name, fn=fn, device="cpu", dtype=torch.float32, tolerance=tol, inputs=lambda: (inputs, truth)
    )


def _calls_in(paired_rounds: int, iterations: dict) -> dict:
    # per side: its checked call, its warm-up, its one-call sizing round and its rounds, each round's
    # block after one untimed call (both sides' blocks are far shorter than REWARM_BELOW_S)
    return {name: 3 + paired_rounds * (1 + k) for name, k in iterations.items()}


def test_a_pair_enters_each_sides_flags_once_per_round_block_not_per_call(entries):
    """precision.tf32's two matmul variants (each sets float32_matmul_precision) at n = 16, a few
    µs a call: many calls a round. The contexts are entered for each side's checked call, its
    warm-up and sizing, and once per round block: 2 + rounds per side, not once per call."""
    inputs = tf32.make_matmul({"n": 16}, torch.float32, "cpu", seed=0)
    truth = tf32.truth_float64(*inputs)
    sides = {
        "matmul.medium": _side("matmul.medium", tf32._matmul_at("medium"), inputs, truth),
        "matmul.highest": _side("matmul.highest", tf32._matmul_at("highest"), inputs, truth),
    }
    before = flags.snapshot()
    timing = run_pair(
        PairAtPoint(KEY, "matmul.medium", "matmul.highest", sides),
        cap_s=0.05,
        min_rounds=5,
        noise_floor=lambda: None,
    )
    assert flags.snapshot() == before, "the flags were not restored after the rounds"
    rounds = len(timing.fast_s)
    calls = sum(_calls_in(rounds, timing.iterations).values())
    assert min(timing.iterations.values()) > 1  # several calls a round: per-call entries would show
    assert entries["n"] == 2 * (2 + rounds), (
        f"{entries['n']} context entries for {calls} calls in {rounds} rounds"
    )


def test_the_bare_call_runs_inside_the_context_and_a_direct_call_still_sets_it(entries, monkeypatch):
    """ieee_fp32 with CUDA faked present (its CUDA branch, on CPU tensors): inside the pair's rounds
    the bare computation sees TF32 off on every call, with one entry per side per round block; a
    direct call (as a check makes) enters the context itself; TF32 is back on after."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    seen = []

    def doubled(x):
        seen.append(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)
        return x * 2

    x = torch.ones(4)
    fast, slow = ieee_fp32(doubled), ieee_fp32(functools.partial(doubled))
    sides = {
        "a": _side("a", fast, (x,), x.double() * 2, Tol(rtol=0.0)),
        "b": _side("b", slow, (x,), x.double() * 2, Tol(rtol=0.0)),
    }
    key = record.PointKey(
        case="c", kind="pair", name="a/b", device="cpu", size={"n": 4}, size_label="n4", dtype="float32"
    )
    with flags.preserved():
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        entries["n"] = 0
        timing = run_pair(
            PairAtPoint(key, "a", "b", sides), cap_s=0.02, min_rounds=5, noise_floor=lambda: None
        )
        assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32  # restored
        rounds = len(timing.fast_s)
        assert len(seen) == sum(_calls_in(rounds, timing.iterations).values()) and not any(seen)
        assert entries["n"] == 2 * (2 + rounds)
        entries["n"], seen[:] = 0, []
        fast(x)
        assert entries["n"] == 1 and seen == [False]


class _Budget:
    max_time_s = 0.05

    def round_cap_s(self, point_id):
        return 0.05

    def spent_in_rounds(self, seconds):
        pass


def fresh_benchmark(request):
    """A pytest-benchmark fixture built as its plugin builds one, enabled, reporting to nobody."""
    from pytest_benchmark.fixture import BenchmarkFixture

    session = request.config._benchmarksession
    options = dict(session.options, max_time=0.05, min_rounds=5)
    return BenchmarkFixture(
        request.node,
        add_stats=lambda stats: None,
        logger=session.logger,
        warner=request.node.warn,
        disabled=False,
        **options,
    )


def test_a_variants_timed_rounds_enter_its_flags_once(entries, request):
    """test_benchmark's path: the checked memory pass calls the variant itself (one entry); the
    pilot and every timed round run the bare computation inside one entry; flags restored after."""
    inputs = tf32.make_matmul({"n": 16}, torch.float32, "cpu", seed=0)
    variant = _side(
        "precision.tf32-matmul.medium", tf32._matmul_at("medium"), inputs, tf32.truth_float64(*inputs)
    )
    bench = fresh_benchmark(request)
    before = flags.snapshot()
    variant_benchmark.run(bench, variant, budget=_Budget(), min_rounds=5, device_ceilings={})
    assert flags.snapshot() == before
    calls = bench.stats.stats.rounds * bench.stats.iterations
    assert calls > 10 and entries["n"] == 2, f"{entries['n']} context entries for {calls} timed calls"


def test_a_compiled_twin_keeps_its_flags_outside_the_timed_calls(entries, monkeypatch):
    """A compiled twin of an fp32 variant once set its flags on every call (the wrapper around the
    compiled function), so its pair against the eager side carried the flags' cost on one side."""
    from harness.measure.compiled import Compiled

    monkeypatch.setattr(torch, "compile", lambda fn, mode=None: fn)  # the wrapping, not Inductor
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # ieee_fp32 sets flags on CUDA only
    twin = Compiled(ieee_fp32(torch.matmul))
    a = torch.randn(8, 8)
    bare, context = block_context.split(twin)
    assert bare is not twin, "the harness gets the computation without its flags"
    entries["n"] = 0
    with context(a, a):
        for _ in range(50):
            bare(a, a)
    assert entries["n"] == 1
    entries["n"] = 0
    twin(a, a)  # called directly, as a check calls it: the flags are set
    assert entries["n"] == 1
