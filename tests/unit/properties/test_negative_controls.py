"""The negative controls' machinery, without running every control
(tests/integration/test_negative_controls.py runs them): known gaps name real targets, a bias lands
outside the bound, and `test_check` / `test_benchmark` fail a variant that writes into its input or is
wrong once warm."""

from __future__ import annotations

import pytest
import torch

from cases import all_cases
from cases.spec import Role, Tol, dtype_name
from harness import measure
from plan import InputCache, VariantPoint
from suite.pair_rounds import Bound
from suite.test_cases import test_benchmark as suite_benchmark
from suite.test_cases import test_check as suite_check
from tests.negative_controls import KNOWN_GAPS, bias
from tests.targets import doubling_point, name_of, target_id, variant_targets

TARGETS = variant_targets()
NOT_PAIRED = Bound(timing=None, side_rounds=lambda point: None)  # a variant timed alone
_name, _target_id = name_of, target_id


def test_known_gaps_name_real_targets():
    names = {(p.case.id, _name(p), dtype_name(p.dtype)) for p in TARGETS}
    assert {key[:3] for key in KNOWN_GAPS} <= names


# ---- the controls' own construction ---------------------------------------------------------------


def test_a_bias_lands_outside_the_bound_where_rounding_would_swallow_it():
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        out = torch.tensor([1.0, 0.0, -3.0, 1000.0, 0.1]).to(dtype)
        truth = out.double()  # the answer exactly: only the bias can move it out
        for tol in (Tol(), Tol(rtol=1e-9), Tol(rtol=2**-8, floor=1e-3), Tol(norm=1e-3)):
            moved = bias(out, truth, tol)
            assert not measure.within_tol(moved, truth, tol).within, (dtype, tol)
            assert moved.dtype == dtype
    ints = torch.tensor([0, 5, 2**31 - 1], dtype=torch.int32)  # the largest moves down, not over
    moved = bias(ints, ints.double(), Tol())
    assert moved.tolist() == [1, 6, 2**31 - 2]


# ---- the suite's path: what the first call cannot show ------------------------------------------


def _synthetic(fn) -> VariantPoint:
    return doubling_point(fn, "synthetic.warm")


def _writes_into_its_input(x):
    out = 2 * x
    x[0] += 1
    return out


def test_check_fails_a_variant_that_writes_into_its_input():
    with pytest.raises(pytest.fail.Exception, match=r"changed its inputs in place.*input 0"):
        suite_check(_synthetic(_writes_into_its_input), InputCache(0))


def _wrong_after_first_call():
    calls = []

    def variant(x):
        calls.append(None)
        return 2 * x if len(calls) == 1 else 2 * x + 1e-3

    return variant, calls


def test_benchmark_fails_a_variant_wrong_once_warm(benchmark, request):
    variant, calls = _wrong_after_first_call()
    with pytest.raises(pytest.fail.Exception, match="outside tolerance.*after the timed calls") as failed:
        suite_benchmark(_synthetic(variant), InputCache(0), benchmark, lambda device: {}, NOT_PAIRED, request)
    assert len(calls) >= 2, "the first call was right: only a later one can be caught"
    # The failure names the precision flags in force: a reduced-precision flag left set would show.
    assert "precision flags: float32_matmul_precision=highest" in str(failed.value)


def test_benchmark_fails_a_variant_that_writes_into_its_input_once_warm(benchmark, request):
    calls = []

    def variant(x):
        calls.append(None)
        return 2 * x if len(calls) == 1 else _writes_into_its_input(x)

    with pytest.raises(pytest.fail.Exception, match=r"in place after the timed calls \(input 0\)"):
        suite_benchmark(_synthetic(variant), InputCache(0), benchmark, lambda device: {}, NOT_PAIRED, request)


def test_benchmark_passes_the_same_variant_right_every_call(benchmark, request):
    suite_benchmark(
        _synthetic(lambda x: 2 * x), InputCache(0), benchmark, lambda device: {}, NOT_PAIRED, request
    )


def test_the_warm_rounds_keep_their_last_output_only():
    from harness.measure.timing import keep_last_output

    outputs = iter(range(10))
    timed, last = keep_last_output(lambda: next(outputs), 4)
    assert [timed() for _ in range(6)] == [None] * 6 and last == [3]


def test_compiled_twins_share_their_naive_variants_check():
    from plan import compiled_twins

    for case in all_cases():
        for part, comparison in case.comparisons().items():
            for twin, source_name in compiled_twins(case.id, part).values():
                assert twin.role is Role.COMPILED
                source = comparison.variants[source_name]
                assert twin.fn.fn is source.fn
                assert (twin.inputs, twin.oracle, twin.tolerance) == (
                    source.inputs,
                    source.oracle,
                    source.tolerance,
                )
