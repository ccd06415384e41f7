"""Our timer agrees with the field's: torch.utils.benchmark on CPU, triton's do_bench on GPU.

"Our median" is the suite's path exactly: pytest-benchmark's fixture (its calibration, rounds and
median) around the synchronized call, in the timing mode being compared. Each test makes fixtures
of its own, so it times even under ``--benchmark-disable`` (CI) and adds nothing to the session's
results.

The two timers are run alternately, several times each, and the medians of their medians are
compared: a machine shared with other jobs slows whole stretches of time, and interleaving puts
both timers in the same stretches. If the first comparison misses the bound, it is repeated (at
most `ATTEMPTS` times in all); every attempt's figures are in the failure message.
"""

from __future__ import annotations

import functools
import inspect
import statistics

import pytest
import torch

from cases import distance
from harness.measure import timing
from tests import quiet

ATTEMPTS = 3
PAIRS = 5


def fresh_benchmark(request, **overrides):
    """A pytest-benchmark fixture built as its plugin builds one (same options), but enabled and
    reporting to nobody. Uses the plugin's fixture class directly; a change in its shape fails
    here rather than skipping the agreement tests (a skip hid a defect once)."""
    from pytest_benchmark.fixture import BenchmarkFixture
    from pytest_benchmark.utils import NameWrapper

    session = request.config._benchmarksession
    if "timer" in overrides and not isinstance(overrides["timer"], NameWrapper):
        # The plugin wraps every timer it is given (the fixture reads `timer.target`).
        overrides["timer"] = NameWrapper(overrides["timer"])
    return BenchmarkFixture(
        request.node,
        add_stats=lambda stats: None,
        logger=session.logger,
        warner=request.node.warn,
        disabled=False,
        **dict(session.options, **overrides),
    )


def test_a_fixture_with_our_own_clock_is_built_and_times_with_it(request):
    """The GPU agreement test hands the fixture a DeviceClock; the same path with a counting clock
    on the CPU: the fixture is built (not skipped) and its rounds read that clock."""
    readings = []

    def clock():
        readings.append(None)
        return len(readings) * 1e-3  # 1 ms per reading

    bench = fresh_benchmark(request, max_time=0.05, min_rounds=5, timer=clock)
    bench.pedantic(lambda: None, rounds=5, iterations=1)
    assert readings and bench.stats.stats.median == pytest.approx(1e-3)


def _ms(seconds) -> str:
    return ", ".join(f"{x * 1e3:.3f}" for x in seconds)


def interleaved(ours, theirs, limit: float) -> tuple[bool, list[str]]:
    """Alternate `ours()` and `theirs()` (each returns a median in seconds) PAIRS times; agree when
    the medians of the medians are within `limit` of `theirs`. Retried up to ATTEMPTS times."""
    lines = []
    for attempt in range(1, ATTEMPTS + 1):
        a, b = [], []
        for _ in range(PAIRS):
            a.append(ours())
            b.append(theirs())
        ma, mb = statistics.median(a), statistics.median(b)
        diff = (ma - mb) / mb
        lines.append(
            f"attempt {attempt}: ours {ma * 1e3:.4f} ms, theirs {mb * 1e3:.4f} ms, {diff:+.2%} "
            f"(ours {_ms(a)}; theirs {_ms(b)})"
        )
        if abs(diff) <= limit:
            return True, lines
    return False, lines


@pytest.mark.timing
@pytest.mark.parametrize(
    "threads",
    [
        pytest.param(1, id="1-thread"),
        # With every core in use, a GEMM waits at barriers for its slowest thread; on a machine
        # shared with other jobs one descheduled thread stretches a call 10-1000× at random
        # (0.15 ms → 190 ms measured here under load). Under load here it agreed (-1.0%, -2.7%)
        # in two runs and missed in a third (+29%, -40%, +15%): not reliable on a shared machine,
        # so slow (left out of CI); it is the comparison to run on a quiet one.
        pytest.param(0, id="all-threads", marks=pytest.mark.slow),
    ],
)
def test_cpu_median_agrees_with_torch_utils_benchmark(request, record_property, threads):
    """Within 5% of Timer.blocked_autorange at the same thread count, on distance.pairwise's
    matmul variant at n = m = 2048, d = 256 (2.1 GFLOP, ~13 ms on one core).

    The size matters. blocked_autorange times blocks of calls long enough to make its timer's
    overhead 1e-4 of the block (≥ 10 ms) and takes the median of block means; pytest-benchmark
    takes the median of single calls. On a loaded machine a block of many short calls always
    contains the time the process was descheduled, a single call usually does not: measured
    here at 0.25 ms per call, 34 MFLOP, ours 0.24-0.25 ms against Timer's 0.6-1.1 ms, every
    attempt. With calls over 10 ms, Timer's blocks are single calls too and the two measure the
    same thing; on a quiet machine they agree at any size.
    """
    from torch.utils import benchmark as tub

    x, y = distance.make_points({"n": 2048, "m": 2048, "d": 256}, torch.float32, "cpu", seed=0)
    call = functools.partial(distance.matmul, x, y)
    previous = torch.get_num_threads()
    threads = threads or previous
    torch.set_num_threads(threads)
    request.addfinalizer(lambda: torch.set_num_threads(previous))

    def ours():
        bench = fresh_benchmark(request, max_time=0.2, min_rounds=5)
        # test_benchmark's path (harness.point.variant_benchmark.run)
        timing.timed_rounds(bench, call, "cpu", "warm", max_time_s=0.2, min_rounds=5, cap_s=0.2)
        return bench.stats.stats.median

    def theirs():
        timer = tub.Timer(stmt="call()", globals={"call": call}, num_threads=threads)
        return timer.blocked_autorange(min_run_time=0.2).median

    call()
    ok, lines = interleaved(ours, theirs, 0.05)
    record_property("agreement", lines)
    print(f"\n[{threads} threads] " + "\n".join(lines))
    quiet.hold(ok, "our median and torch.utils.benchmark's disagree by more than 5%:\n" + "\n".join(lines))


# Elementwise adds whose operands are far larger than an H100's or H200's 50 MB L2, so that
# do_bench's L2 flush before each call changes nothing and the two measure the same work: ~20 µs,
# ~45 µs and ~100 µs of HBM traffic at ~3 TB/s, then a 4096³ fp32 GEMM of a few milliseconds.
GPU_POINTS = {"add-20us": 24, "add-45us": 48, "add-100us": 112, "gemm-4096": None}  # MiB per operand


@pytest.mark.gpu
@pytest.mark.timing
@pytest.mark.parametrize("name", list(GPU_POINTS))
def test_gpu_median_agrees_with_triton_do_bench(request, record_property, name):
    """The suite's CUDA figure (device time from CUDA events over back-to-back calls, the warm
    path of test_benchmark with its DeviceClock) within 5% of triton.testing.do_bench's median,
    including kernels of 20-100 µs where a host-side timer would add the launch and the barrier."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    testing = pytest.importorskip("triton.testing", reason="needs the optional package 'triton'")
    from harness.measure.timing import DeviceClock

    g = torch.Generator(device="cuda").manual_seed(0)
    mib = GPU_POINTS[name]
    if mib is None:
        a = torch.randn(4096, 4096, device="cuda", generator=g)
        b = torch.randn(4096, 4096, device="cuda", generator=g)
        call = functools.partial(torch.mm, a, b)
    else:
        a = torch.randn(mib * 2**18, device="cuda", generator=g)
        b = torch.randn(mib * 2**18, device="cuda", generator=g)
        out = torch.empty_like(a)
        call = functools.partial(torch.add, a, b, out=out)
    median_kw = (
        {"return_mode": "median"}
        if "return_mode" in inspect.signature(testing.do_bench).parameters
        else {"quantiles": [0.5]}
    )

    def ours():
        clock = DeviceClock("cuda")
        bench = fresh_benchmark(request, max_time=0.3, min_rounds=5, timer=clock)
        timing.timed_rounds(bench, call, "cuda", "warm", max_time_s=0.3, min_rounds=5, cap_s=0.3, clock=clock)
        return bench.stats.stats.median

    def theirs():
        ms = testing.do_bench(call, warmup=25, rep=100, **median_kw)
        return (ms[0] if isinstance(ms, (list, tuple)) else ms) / 1e3

    call()
    torch.cuda.synchronize()
    ok, lines = interleaved(ours, theirs, 0.05)
    record_property("agreement", lines)
    print(f"\n[{name}] " + "\n".join(lines))
    message = f"{name}: our device-time median and triton's do_bench disagree by more than 5%:\n"
    quiet.hold(ok, message + "\n".join(lines))
