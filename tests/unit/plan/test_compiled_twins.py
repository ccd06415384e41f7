"""torch.compile beside every timed pair: which variants get a compiled twin, why one cannot, and
the report's finding on whether the compiler closes the gap."""

import math

import pandas as pd
import pytest
import torch

from cases import all_cases
from cases.spec import Role
from harness.contract import record
from harness.measure import compiled
from plan import compiled_variants, variant_points
from reports import verdicts


def test_every_timed_pair_has_a_compiled_variant_or_a_reason_in_the_full_profile():
    points = variant_points("full", ("cpu",))
    compiled_pairs = {(p.case.id, p.part) for p in points if p.variant.role is Role.COMPILED}
    pairs = 0
    for case in all_cases():
        for part, comparison in case.comparisons().items():
            roles = {v.role for v in comparison.variants.values()}
            timed_pair = Role.NAIVE in roles and roles & {Role.OPTIMIZED, Role.LIBRARY}
            if not timed_pair:
                continue
            pairs += 1
            naive = [n for n, v in comparison.variants.items() if v.role is Role.NAIVE]
            assert (case.id, part) in compiled_pairs or set(naive) <= set(comparison.uncompilable), (
                case.id,
                part,
            )
            for name, variant in compiled_variants(case.id, part).items():
                source = record.compiled_source(name, naive)
                assert source in naive and variant.oracle is comparison.variants[source].oracle
                assert variant.tolerance is comparison.variants[source].tolerance  # held to the naive's bound
    assert pairs > 20


def test_quick_profile_compiles_only_the_representative_pairs_at_their_largest_size():
    unknown = {"cpu": None, "cuda": None}  # no memory limit known: the largest size
    quick = [
        p
        for p in variant_points("quick", ("cpu", "cuda"), capacity=unknown)
        if p.variant.role is Role.COMPILED
    ]
    assert {p.case.id for p in quick} == set(compiled.QUICK_CASES)
    assert all(p.size == p.comparison.sizes_for("quick")[-1] for p in quick)
    assert not any(p.variant_name.endswith("_max_autotune") for p in quick)
    full = [
        p
        for p in variant_points("full", ("cpu", "cuda"), capacity=unknown)
        if p.variant.role is Role.COMPILED
    ]
    assert all(p.size == p.comparison.sizes_for("full")[-1] for p in full), (
        "one compile per pair, at its largest size"
    )
    autotuned = [p for p in full if p.variant_name.endswith("_max_autotune")]
    assert autotuned and {p.device for p in autotuned} == {"cuda"}


def test_compiled_option_puts_twins_beside_all_pairs_or_none():
    def compiled_pairs(scope):
        points = variant_points("quick", ("cpu",), scope)
        return {(p.case.id, p.part) for p in points if p.variant.role is Role.COMPILED}

    every = compiled_pairs("all")
    assert {c for c, _ in every} > set(compiled.QUICK_CASES)
    assert ("layout.contiguous", "conv3x3") in every  # parts are pairs too
    assert compiled_pairs("none") == set()
    assert compiled_pairs("auto") == compiled_pairs("representative")
    assert {c for c, _ in compiled_pairs("auto")} == set(compiled.QUICK_CASES)


def test_missing_compiler_is_a_skip_with_the_reason(monkeypatch):
    from harness.machine import premises, requirements

    variant = compiled_variants("distance.pairwise")["compiled"]
    assert "compiler" in variant.requires
    monkeypatch.setattr(
        premises,
        "torch_compile",
        lambda device: premises.Premise(f"torch.compile on {device}", False, "no C++ compiler"),
    )
    assert "no C++ compiler" in requirements.unmet(variant.requires, "cpu")


# A real torch.compile: inductor generates C++ and runs the compiler in another process (~10 s
# on the 2-core CI machine, the unit tier's slowest test): the integration tier's kind of test.
@pytest.mark.integration
def test_compile_time_is_measured_apart_and_the_result_is_right():
    fn = compiled.Compiled(lambda x: (x * 2).sin().sum(-1))
    x = torch.randn(64, 32)
    out, seconds, breaks = fn.compile_and_time(x)
    assert seconds > 0 and breaks == 0
    torch.testing.assert_close(fn(x), (x * 2).sin().sum(-1))


def test_state_set_around_a_variant_stays_outside_the_compiled_graph(monkeypatch):
    from cases._lib.precision import ieee_fp32

    def f(x):
        return (x * 2).sin()

    compiled_fns = []
    real_compile = torch.compile

    def spy(fn, mode=None):
        compiled_fns.append(fn)
        # What is compiled is the question, not how: dynamo's eager backend traces the same graph
        # without inductor's codegen and C++ build (~9 s on the CI machine).
        return real_compile(fn, backend="eager")

    monkeypatch.setattr(torch, "compile", spy)
    wrapped = compiled.Compiled(ieee_fp32(f))
    x = torch.randn(8)
    out, _, breaks = wrapped.compile_and_time(x)
    assert compiled_fns == [f] and breaks == 0  # f itself, not the flag-setting wrapper
    torch.testing.assert_close(out, f(x))


# Inductor's own random numbers are the question (it draws dropout masks the eager way only
# under harness.measure.compiled's settings): a real inductor compile, so the integration tier.
@pytest.mark.integration
def test_compiled_dropout_draws_eager_masks():
    def step(x):
        torch.manual_seed(7)
        return torch.nn.functional.dropout(x, 0.5, training=True) * 3

    x = torch.randn(256)
    fn = compiled.Compiled(step)
    out, _, _ = fn.compile_and_time(x)
    torch.testing.assert_close(out, step(x))
    torch.testing.assert_close(fn(x), step(x))  # steady state: the same compiled code


def _row(fast, slow, against, t_fast, t_slow, size="n1"):
    return dict(
        machine="m",
        case="c",
        tier=1,
        size_label=size,
        x_name="n",
        x=1.0,
        dtype="float32",
        device="cpu",
        fast=fast,
        slow=slow,
        against=against,
        fast_rounds=10,
        slow_rounds=10,
        fast_median_s=t_fast,
        slow_median_s=t_slow,
        speedup=t_slow / t_fast,
        ci_low=math.nan,
        ci_high=math.nan,
        fast_peak_bytes=1.0,
        slow_peak_bytes=1.0,
        memory_ratio=1.0,
        verdict="",
    )


@pytest.mark.parametrize(
    "t_compiled, expected",
    [
        (1.05, "closes the gap"),  # within 10% of the optimized way
        (10**0.5, "closes part of it (50%)"),  # half the speedup, in log terms
        (9.8, "does not close it (1%)"),
    ],
)
def test_the_finding_says_how_much_of_the_gap_compile_closes(t_compiled, expected):
    summary = pd.DataFrame(
        [
            _row("opt", "naive", "rule", 1.0, 10.0),
            _row("compiled", "naive", "compiled", t_compiled, 10.0),
            _row("opt", "compiled", "compiled", 1.0, t_compiled),
        ]
    )
    lines = verdicts.compile_findings(summary)
    assert len(lines) == 1 and expected in lines[0] and "opt 10× over naive" in lines[0]


def test_a_large_speedup_short_of_the_trick_is_not_called_closed():
    """distance.pairwise on the CI machine: compiled broadcast 77× over broadcast, the matmul
    expansion 298×: 99% of the time saved, but still 3.9× slower than the trick."""
    summary = pd.DataFrame(
        [
            _row("opt", "naive", "rule", 1.78e-3, 0.531),
            _row("compiled", "naive", "compiled", 6.9e-3, 0.531),
            _row("opt", "compiled", "compiled", 1.78e-3, 6.9e-3),
        ]
    )
    (line,) = verdicts.compile_findings(summary)
    assert "closes part of it (76%)" in line and "3.88× faster than compiled" in line


def test_a_pair_not_compiled_carries_its_reason_into_the_results_and_the_report():
    from harness.contract import declared

    cases = declared.case_infos(all_cases())
    for case_id, naive in (("data.recordio", "one_file_per_sample"), ("parallel.allreduce", "master")):
        info = record.CaseInfo.from_data(cases[case_id].to_data())  # as a results file keeps it
        assert info.uncompilable.get(naive), (case_id, info.uncompilable)
        summary = pd.DataFrame({"slow": [naive], "fast": ["x"]})
        (line,) = verdicts.not_compiled(info, summary)
        assert line.startswith(f"not compiled: {naive}: ")
        assert verdicts.not_compiled(info, summary.assign(slow=["other"])) == []


def test_a_training_step_compiles_the_part_a_user_would():
    from cases.precision import amp

    compiled_fns = []

    def step(*inputs):
        return inputs

    def compile_model(compile_fn):
        compiled_fns.append(compile_fn)
        return lambda *inputs: ("model compiled", inputs)

    step.__compile__ = compile_model
    wrapped = compiled.Compiled(step)
    out, _, _ = wrapped.compile_and_time(torch.ones(2))
    assert out[0] == "model compiled" and len(compiled_fns) == 1
    assert amp.fp32_step.__compile__ is amp._compile_the_model  # the amp step compiles its model only


def test_a_compiled_twin_is_timed_in_one_mode_only():
    from harness.measure.timing import TIMING_MODES
    from plan import with_timing_modes

    points = with_timing_modes(variant_points("full", ("cuda",)), TIMING_MODES)
    compiled_modes = {(p.id.split("-cuda")[0], p.timing) for p in points if p.variant.role is Role.COMPILED}
    assert {mode for _, mode in compiled_modes} == {TIMING_MODES[0]}
    assert any(p.timing == "graph" for p in points if p.variant.role is not Role.COMPILED)


@pytest.mark.integration
def test_a_twin_records_no_metrics_of_its_eager_source(tmp_path):
    """memory.checkpoint's metrics (saved activations by segment count) describe its eager
    variants; its twins record none. (Their names once reached the metrics as keys: the
    max-autotune twins' `plain_max_autotune` was a KeyError after the compile.)"""
    import json
    import subprocess

    from tests.launcher import PYTEST, ROOT

    out = tmp_path / "run.json"
    select = "test_benchmark and memory.checkpoint and linear.plain and depth8 and cpu"
    run = subprocess.run(
        [*PYTEST, "suite", "--device", "cpu", "--compiled", "all", "--benchmark-only", "-k", select,
         "--benchmark-max-time=0.05", f"--benchmark-json={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    extra = {b["extra_info"]["variant"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
    assert "saved_bytes" in extra["linear.plain"]
    assert (
        "saved_bytes" not in extra["compiled_linear.plain"] and "compile_s" in extra["compiled_linear.plain"]
    )


def test_a_twin_is_placed_at_the_largest_size_its_naive_way_fits():
    """On an 80 GB GPU, distance.pairwise's broadcast needs 2 TiB at n = 32768: never run there,
    so its twin (which needs the naive time beside it) goes to the largest size that fits."""
    gpu = {"cuda": int(0.9 * 80 * 2**30)}
    points = variant_points("full", ("cuda",), capacity=gpu)
    twins = [p for p in points if p.case.id == "distance.pairwise" and p.variant_name == "compiled"]
    (twin,) = twins
    sizes = twin.comparison.sizes_for("full")
    broadcast = twin.comparison.variants["broadcast"]
    need = [broadcast.peak_bytes(s, 4) for s in sizes]
    assert need[-1] > gpu["cuda"], "the premise: the largest size does not fit"
    fitting = [s for s, n in zip(sizes, need) if n <= gpu["cuda"]]
    assert twin.size == fitting[-1] and twin.dtype == torch.float32
    # the naive way is collected at that size too, so the pair compiled-vs-naive exists
    assert any(
        p.variant_name == "broadcast" and p.size == twin.size and p.dtype == twin.dtype for p in points
    )


def test_a_twins_source_is_read_from_the_record_not_its_name():
    """The report pairs a compiled twin with the naive variant its record names (`compiled_from`,
    set by the plan); only a file written before that field reads it from the twin's name, which
    cannot say which of two naive variants `compiled` compiles."""
    from reports import summary

    group = summary.Group({})
    group.roles = {"loop": "naive", "gather": "naive", "fused": "optimized", "compiled": "compiled"}
    assert not any(against == "compiled" for _, _, against in group.pairs(None))  # the name is ambiguous
    group.sources = {"compiled": "gather"}
    compiled_pairs = {(fast, slow) for fast, slow, against in group.pairs(None) if against == "compiled"}
    assert ("compiled", "gather") in compiled_pairs and ("fused", "compiled") in compiled_pairs
    assert not any(slow == "loop" and fast == "compiled" for fast, slow in compiled_pairs)
    del group.roles["gather"]  # the naive way it compiles was not timed at this size: nothing to pair
    assert not any(against == "compiled" for _, _, against in group.pairs(None))


def test_every_twin_in_the_plan_names_the_variant_it_compiles():
    for point in variant_points("quick", ("cpu",), "all", capacity={"cpu": None}):
        if point.variant.role is Role.COMPILED:
            source = point.comparison.variants[point.key.compiled_from]
            assert source.role is Role.NAIVE and point.variant.fn.fn is source.fn, point.id
        else:
            assert point.key.compiled_from == "", point.id
