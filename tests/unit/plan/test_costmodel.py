"""The run-time cost model (plan.costmodel, plan.estimate): its calls per point follow the
rounds policy the suite really uses, and a saved GPU log reads back into per-point medians."""

import functools

import pytest

from plan import costmodel
from plan.estimate import read_benchmark_log
from tests import paths


@functools.lru_cache(maxsize=None)
def _collected(*pytest_args):
    """The plan of one selection, collected once (pytest's collection of the suite takes ~1.5 s)
    for the tests that price it under several machine descriptions."""
    from suite.collection import collect

    return tuple(collect(list(pytest_args)))


ROOT = paths.ROOT
# One collection for the CUDA pricing tests (each reads its own case's totals): DataParallel's and
# DDP's launches, and the six variants of distance.pairwise at n = 128.
CUDA_PLAN = (
    "--device",
    "cuda",
    "--benchmark-only",
    "-k",
    "(dp_vs_ddp and cuda and not w2) or "
    "(distance.pairwise and n128 and float32 and test_benchmark and not compiled)",
)


def test_a_quiet_fast_point_costs_its_pilot_and_the_minimum_rounds():
    est = costmodel.timed_point(50e-6, 0.005, device="cuda")
    assert est.iterations == 40  # 2 ms rounds of 50 µs calls
    assert est.rounds == 5
    # warm-up + the gap's fit (rounds of 1-32 calls, 3 each) + 10 pilot rounds + 5 rounds of 40
    # calls + memory pass + 10 probe calls
    assert est.calls == 1 + 3 * 63 + 400 + 200 + 1 + 10


def test_noisier_points_get_more_rounds_within_the_cap():
    quiet = costmodel.timed_point(1e-3, 0.01, device="cpu")
    noisy = costmodel.timed_point(1e-3, 0.10, device="cpu")
    # σ 10%: the pilot's interval ~7.7%, so 10·(7.7/2)² ≈ 150 rounds, inside the 1 s cap
    assert quiet.rounds == 5 and 140 <= noisy.rounds <= 160


def test_a_slow_call_gets_three_rounds_one_probe_and_no_pilot():
    est = costmodel.timed_point(4.0, 0.01, device="cuda", cap_s=1.0)
    assert (est.rounds, est.calls) == (3, 1 + 3 + 1 + 1)
    assert est.seconds == pytest.approx(6 * 4.0, rel=1e-3)


def test_the_h100_log_reads_back_per_point_medians():
    points = read_benchmark_log(ROOT / "tests/data/h100_timing_modes.log")
    median, spread = points["distance.pairwise-matmul-n1024-m1024-d256-float32-cuda"]
    assert median == pytest.approx(105.3175e-6)
    assert spread == pytest.approx(24.5820 / 1.349 / 105.3175)
    assert points["distance.pairwise-broadcast-n1024-m1024-d256-float32-cuda-graph"][0] == pytest.approx(
        1851.056e-6
    )


def test_a_point_too_big_for_the_device_costs_nothing():
    from plan import variant_points
    from plan.estimate import _too_big

    points = {p.id: p for p in variant_points("full", ("cuda",), "none")}
    huge = points["distance.pairwise-broadcast-n32768-m32768-d256-float32-cuda"]  # a 1 TiB intermediate
    fits = points["distance.pairwise-matmul-n32768-m32768-d256-float32-cuda"]
    assert _too_big(huge, 80) and not _too_big(fits, 80)


@pytest.mark.parametrize("gpus, launches", [(1, 1), (2, 2)])
def test_tests_that_need_more_gpus_than_the_machine_has_cost_nothing(gpus, launches):
    """On one GPU, DataParallel's launch (marked multigpu) is skipped; DDP on one rank still runs."""
    from argparse import Namespace

    from plan.estimate import estimate

    plan = _collected(*CUDA_PLAN)
    args = Namespace(
        gpus=gpus, check_s=0.0, launch_s=1.0, compile_s=0.0, autotune_s=0.0, memory_gib=80.0,
        cap_s=1.0, fixed_s=0.0, group_s=0.0, oracle_factor=0.0, default_call_s=1e-3, default_spread=0.02,
    )  # fmt: skip
    totals = estimate(plan, {}, args)["parallel.dp_vs_ddp"]
    assert {"test_dataparallel", "test_ddp"} <= {p.nodeid.split("::")[1].split("[")[0] for p in plan}
    assert totals.checks_s == launches and totals.skipped == 2 - launches


@pytest.mark.parametrize("gpus, priced", [(0, 0), (1, 6)])
def test_cuda_points_cost_nothing_on_a_machine_without_a_gpu(gpus, priced):
    """The default --gpus is this machine's: a machine without one runs none of the CUDA tests."""
    from argparse import Namespace

    from plan.estimate import estimate

    args = Namespace(
        gpus=gpus, check_s=0.0, launch_s=0.0, compile_s=0.0, autotune_s=0.0, memory_gib=80.0,
        cap_s=1.0, fixed_s=0.0, group_s=0.0, oracle_factor=0.0, default_call_s=1e-3, default_spread=0.02,
    )  # fmt: skip
    totals = estimate(_collected(*CUDA_PLAN), {}, args)["distance.pairwise"]
    assert (totals.points, totals.skipped) == (priced, 6 - priced)  # six variants


def test_a_results_json_calibrates_calls_and_compiles(tmp_path):
    """A machine's own earlier run (gzipped, as the reference folders keep it) prices the next:
    medians, spreads and each twin's measured compile time; twins of uncompilable variants cost
    nothing (the suite skips them with their reason)."""
    import gzip
    import json
    from argparse import Namespace

    from plan.estimate import estimate, read_results
    from suite.collection import collect

    twin = "distance.pairwise-compiled-n1024-m1024-d256-float32-cpu"
    stats = {"median": 0.01, "iqr": 0.001349}
    doc = {"benchmarks": [{"param": twin, "stats": stats, "extra_info": {"compile_s": 7.5}}]}
    path = tmp_path / "run.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    points, compiles = read_results(path)
    assert points[twin] == pytest.approx((0.01, 0.1)) and compiles == {twin: 7.5}

    args = Namespace(
        gpus=1, check_s=0.0, launch_s=0.0, compile_s=100.0, autotune_s=100.0, memory_gib=80.0,
        cap_s=1.0, fixed_s=0.0, group_s=0.0, oracle_factor=0.0, default_call_s=1e-3, default_spread=0.02,
    )  # fmt: skip
    select = "(distance.pairwise and n1024) or data.recordio"
    plan = collect(["--device", "cpu", "--benchmark-only", "--compiled", "all", "-k", select])
    totals = estimate(plan, points, args, compiles)
    assert totals["distance.pairwise"].compile_s == 7.5
    assert totals["data.recordio"].compile_s == 0 and totals["data.recordio"].skipped == 1


def test_a_pair_costs_its_floor_of_rounds_of_both_sides_and_the_cheap_side_a_tenth_more():
    """distance.pairwise at n = 256 on the CPU: the broadcast 70 ms a call, the matmul 0.4 ms. The
    matmul's block is a tenth of the broadcast's (18 calls) plus its untimed call; 20 rounds, the
    floor, are more than the 1 s cap holds."""
    est = costmodel.paired_point([(0.4e-3, 0.05), (70e-3, 0.05)], device="cpu")
    assert (est.rounds, est.iterations) == (20, 18 + 1)
    round_s = 19 * 0.4e-3 + 70e-3
    assert est.seconds == pytest.approx(2 * (0.4e-3 + 70e-3) + 20 * round_s, rel=0.01)


def test_a_side_of_a_pair_costs_its_checked_calls_only():
    assert costmodel.replayed_point(1e-3, device="cpu").seconds == pytest.approx(2e-3)
    assert (
        costmodel.replayed_point(1e-3, device="cpu").seconds
        < costmodel.timed_point(1e-3, 0.01, device="cpu").seconds / 5
    )


def test_a_plan_prices_a_selected_pairs_sides_as_replayed_and_alone_as_timed():
    from argparse import Namespace

    from plan.estimate import estimate

    args = Namespace(
        gpus=0, check_s=0.0, launch_s=0.0, compile_s=0.0, autotune_s=0.0, memory_gib=80.0,
        cap_s=1.0, fixed_s=0.0, group_s=0.0, oracle_factor=0.0, default_call_s=1e-3, default_spread=0.02,
    )  # fmt: skip
    select = "distance.pairwise and n128 and (matmul or broadcast) and not compiled and not unit_norm"
    both = estimate(_collected("--device", "cpu", "-k", select), {}, args)["distance.pairwise"]
    alone = estimate(_collected("--device", "cpu", "-k", f"{select} and not test_pair"), {}, args)[
        "distance.pairwise"
    ]
    two_sides = 2 * costmodel.replayed_point(1e-3, device="cpu").seconds
    pair = costmodel.paired_point([(1e-3, 0.02)] * 2, device="cpu").seconds
    assert both.calls_s == pytest.approx(two_sides + pair)
    assert alone.calls_s == pytest.approx(2 * costmodel.timed_point(1e-3, 0.02, device="cpu").seconds)
