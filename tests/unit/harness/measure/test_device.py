"""One clock per device in every timing path (issue 37, item 1): on CUDA a timed pair's rounds, the
noise floor's A/A pair, cold-L2 and graph rounds are read on the device's clock (an event at each
round's start and end, the clock waiting at its readings), with no barrier between the calls.

Run on the CPU with CUDA faked by `tests.fake_device.FakeDevice`: its events read a counter that the
fake kernels below move, and it counts every barrier (a device synchronize in ``syncs``, an
event's wait in ``event_waits``) and logs them beside the calls. A path still timed by the host
around a synchronised call shows as a ``sync`` after every call and figures that are not the
kernels' (the first H100 run read 17.6x host-timed where the device gives ~47x).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import types

import pytest
import torch

from cases.spec import Tol
from harness import measure
from harness.contract import gain, record
from harness.machine import noise
from harness.measure import device as harness_device
from harness.measure import interleave, timing
from harness.point import marks, pair_benchmark
from harness.point.variant_benchmark import VariantAtPoint
from tests.fake_device import FakeDevice
from tests.fake_gpu import host_bound_pair, kernel
from tests.fake_gpu import pair as _pair


@pytest.fixture
def fake():
    with harness_device.installed(FakeDevice()) as device:
        yield device


def between_readings(log: list[str]) -> list[list[str]]:
    """What happened between consecutive clock readings."""
    blocks, block = [], []
    for entry in log:
        if entry == "read":
            blocks.append(block)
            block = []
        else:
            block.append(entry)
    return blocks[1:]


def test_a_pairs_rounds_are_device_time_with_one_barrier_per_reading(fake):
    """47 µs and 2.2 ms of device time per call: each side's per-call figure is its kernel's, the
    short side runs several calls per round (2 ms rounds on CUDA) with no barrier between them,
    and the only barriers are the clock's readings, two per round: the paired rounds, each side's
    sizing call and gap fit (rounds of 1-32 calls, three each, up to 10 ms: 18 for the short side,
    9 for the long one), and its graph replay's (one sizing round and five timed)."""
    timing_ = pair_benchmark.run(
        _pair(fake, 47e-6, 2.209e-3), cap_s=0.05, min_rounds=5, noise_floor=lambda: None
    )
    assert timing_.timer == "cuda_events"
    assert timing_.fast_s == pytest.approx([47e-6] * len(timing_.fast_s), rel=1e-4)
    assert timing_.slow_s == pytest.approx([2.209e-3] * len(timing_.slow_s), rel=1e-4)
    assert timing_.iterations == {"matmul": 43, "broadcast": 1}
    assert fake.syncs == 0, f"{fake.syncs} device barriers outside the clock's readings"
    rounds = 2 * len(timing_.fast_s) + 2 + 18 + 9 + 2 * 6
    assert fake.event_waits == 2 * rounds
    sizes = {1, 2, 4, 8, 16, 32, 43}  # a fit's rounds, a paired round's calls
    for block in between_readings(fake.log):
        if block[-1:] == ["replay"] and "call" in block:  # the graph's capture (no launch), a warm replay
            assert block in [["call"] * k + ["replay"] for k in timing_.graph_calls.values()], block
        else:
            assert (
                block == []
                or block == ["call"] * len(block)
                and len(block) in sizes
                or set(block) == {"replay"}
            )
    assert record.PairTiming.from_data(timing_.to_data()).timer == "cuda_events"


def test_a_pair_on_the_cpu_is_timed_by_the_host_and_says_so():
    x = torch.ones(4)
    side = VariantAtPoint(
        id="s",
        fn=lambda t: t * 2,
        device="cpu",
        dtype=torch.float32,
        tolerance=Tol(rtol=0.0),
        inputs=lambda: ((x,), x.double() * 2),
    )
    key = record.PointKey(
        case="c", kind="pair", name="a/b", device="cpu", size={"n": 4}, size_label="n4", dtype="float32"
    )
    pair = pair_benchmark.PairAtPoint(key=key, fast="a", slow="b", sides={"a": side, "b": side})
    assert (
        pair_benchmark.run(pair, cap_s=0.01, min_rounds=5, noise_floor=lambda: None).timer == "perf_counter"
    )


def test_the_noise_floors_a_a_pair_is_read_on_the_device_clock():
    """The A/A pair's rounds on the device's clock (here one that follows the host's time, as the
    fake's matmul runs on the host): the floor judges figures timed the way the pairs are."""
    fake = FakeDevice(ticks=time.perf_counter)
    with harness_device.installed(fake):
        measured = noise.measured("cuda")
    assert measured["timer"] == "cuda_events"
    assert measured["rounds"] >= noise.MIN_ROUNDS
    assert fake.syncs == 0, f"{fake.syncs} device barriers outside the clock's readings"
    assert fake.event_waits == 2 * (2 * measured["rounds"] + 2)


def fresh_benchmark(request, timer):
    """A pytest-benchmark fixture built as its plugin builds one, enabled, with `timer` as the
    point's timer (as the `benchmark` marker hands a CUDA point's DeviceClock), reporting to nobody."""
    from pytest_benchmark.fixture import BenchmarkFixture
    from pytest_benchmark.utils import NameWrapper

    session = request.config._benchmarksession
    options = dict(session.options, max_time=0.05, min_rounds=5, timer=NameWrapper(timer))
    return BenchmarkFixture(
        request.node,
        add_stats=lambda stats: None,
        logger=session.logger,
        warner=request.node.warn,
        disabled=False,
        **options,
    )


def test_cold_l2_rounds_are_device_time_with_the_flush_outside_them(fake, request):
    """Each round: the flush (pedantic's setup, no barrier of its own), a reading, the call, a
    reading. The figure is the call's 2 ms of device time, not the flush's nor the host's."""
    out = torch.ones(3)
    clock = timing.DeviceClock("cuda")
    bench = fresh_benchmark(request, clock)
    result, info = timing.timed_rounds(
        bench, kernel(fake, 2e-3, out), "cuda", "cold_l2", max_time_s=0.05, min_rounds=5, clock=clock
    )
    assert result is out and info["timer"] == "cuda_events"
    assert info["l2_flush_bytes"] == 2 * fake.l2_bytes()
    assert bench.stats.stats.data == pytest.approx([2e-3] * len(bench.stats.stats.data), rel=1e-4)
    assert fake.syncs == 0, f"{fake.syncs} device barriers outside the clock's readings"
    assert all(block in ([], ["call"]) for block in between_readings(fake.log))


def test_graph_rounds_and_their_eager_twin_are_read_on_the_same_device_clock(fake, request):
    """The replay's rounds are device time (1 ms a replay), and so is the eager call it is set
    against (3 ms, its launches' gaps included): the launch-overhead fraction compares one clock's
    figures, 1 - 1/3."""
    out = torch.ones(3)

    def replay():
        fake.advance(1e-3)
        fake.log.append("replay")
        return out

    clock = timing.DeviceClock("cuda")
    bench = fresh_benchmark(request, clock)
    result, info = timing.timed_rounds(
        bench,
        kernel(fake, 3e-3, out),
        "cuda",
        "graph",
        max_time_s=0.05,
        min_rounds=5,
        cap_s=0.05,
        replay=replay,
        clock=clock,
    )
    assert result is out and info["timer"] == "cuda_events"
    assert bench.stats.stats.data == pytest.approx([1e-3] * len(bench.stats.stats.data), rel=1e-4)
    assert info["eager_seconds"] == pytest.approx(3e-3, rel=1e-4)
    assert info["launch_overhead_fraction"] == pytest.approx(2 / 3, rel=1e-3)
    assert fake.syncs == 0, f"{fake.syncs} device barriers outside the clock's readings"
    assert all(set(block) <= {"replay", "call"} for block in between_readings(fake.log))


def test_a_cuda_point_handed_no_clock_is_host_timed_and_says_so(fake, request):
    bench = fresh_benchmark(request, time.perf_counter)
    _, info = timing.timed_rounds(
        bench, kernel(fake, 1e-3, None), "cuda", "warm", max_time_s=0.02, min_rounds=3
    )
    assert info["timer"] == "perf_counter_synchronized"
    # A barrier after every call (the busy-vs-wall probe's own, and one before it), no clock readings
    # but the probe's events.
    assert fake.syncs == fake.log.count("call") + 1 and fake.event_waits == 0


@pytest.mark.parametrize("mode", timing.TIMING_MODES)
def test_every_cuda_timing_mode_gets_the_device_clock(mode):
    clock = marks._clock(types.SimpleNamespace(device="cuda", timing=mode))
    assert isinstance(clock, timing.DeviceClock) and "DeviceClock(cuda)" in repr(clock)
    assert marks._clock(types.SimpleNamespace(device="cpu", timing=mode)) is None


def test_a_synchronized_call_waits_after_its_work(fake):
    wrapped = measure.synchronized(lambda: fake.log.append("call") or 42, "cuda")
    assert wrapped() == 42 and fake.log == ["call", "sync"]
    assert measure.synchronized(abs, "cpu") is abs


def test_peak_memory_reads_the_devices_allocator_statistics(fake):
    fake.allocated, fake.peak = 100, 500

    def work():
        fake.peak = fake.allocated + 64
        return "out"

    assert measure.peak_memory(work, "cuda") == ("out", 64)
    assert fake.syncs == 2  # before the reset and before the read


def test_interleave_times_with_the_clock_it_is_handed(fake):
    paired = interleave.timed_pair(
        {"a": kernel(fake, 1e-3, None), "b": kernel(fake, 3e-3, None)},
        cap_s=0.01,
        min_rounds=6,
        clock=fake.clock(),
    )
    assert paired.seconds["a"] == pytest.approx([1e-3] * 6, rel=1e-4)
    assert paired.seconds["b"] == pytest.approx([3e-3] * 6, rel=1e-4)


def test_a_checks_own_timed_claim_and_context_timers_read_the_device_clock(fake):
    """cases._lib.timing (a check whose finding is "A is faster than B", and the context figures
    beside it) once timed each call on the host around a device barrier."""
    from cases._lib import timing as case_timing

    fast, slow = kernel(fake, 47e-6, None), kernel(fake, 2.209e-3, None)
    ratio, _ = case_timing.timed_claim({"fast": fast, "slow": slow}, "fast", "slow", torch.device("cuda"))
    assert ratio.point == pytest.approx(2.209e-3 / 47e-6, rel=1e-3)
    assert case_timing.best_time(slow, torch.device("cuda")) == pytest.approx(2.209e-3, rel=1e-4)
    assert case_timing.median_time(fast, torch.device("cuda")) == pytest.approx(47e-6, rel=1e-3)
    assert fake.syncs == 0, f"{fake.syncs} device barriers outside the clock's readings"


def test_an_accelerator_other_than_cuda_is_reached_through_torch_accelerator(monkeypatch):
    """MPS and XPU: the same interface over torch.accelerator and torch.Event, each call made with
    the device it stands for, the clock named after it; nothing is called on construction."""
    calls = []
    fake = types.SimpleNamespace(
        synchronize=lambda dev: calls.append(("synchronize", dev)),
        current_stream=lambda dev: calls.append(("current_stream", dev)) or "stream",
        empty_cache=lambda: calls.append(("empty_cache",)),
        reset_peak_memory_stats=lambda dev: calls.append(("reset", dev)),
        memory_allocated=lambda dev: 7,
        max_memory_allocated=lambda dev: 11,
    )
    monkeypatch.setattr(torch, "accelerator", fake, raising=False)
    events = []
    monkeypatch.setattr(
        torch,
        "Event",
        lambda dev, enable_timing: events.append((dev, enable_timing)) or "event",
        raising=False,
    )
    for kind in harness_device.ACCELERATORS:
        calls.clear()
        events.clear()
        dev = harness_device.of(kind)
        assert isinstance(dev, harness_device.AcceleratorDevice) and not calls
        assert dev.kind == kind and dev.timer_name == f"{kind}_events"
        dev.synchronize()
        assert dev.current_stream() == "stream" and dev.event() == "event"
        dev.reset_peak_memory()
        assert (dev.memory_allocated(), dev.max_memory_allocated(), dev.has_allocator_stats()) == (
            7,
            11,
            True,
        )
        dev.release_cached()
        want = torch.device(kind)
        assert calls == [("synchronize", want), ("current_stream", want), ("reset", want), ("empty_cache",)]
        assert events == [(want, True)]
        assert harness_device.timer_name(dev.clock()) == f"{kind}_events"
    assert isinstance(harness_device.of("cuda"), harness_device.CudaDevice)
    assert harness_device.of("cuda").timer_name == harness_device.DEVICE_TIMER


# The in-window launch gap. After a clock's reading has waited for the device, the GPU sits idle
# while the host returns, loops and launches the round's first kernel: that gap falls inside every
# round. On an H100 the distance matmul at n = 1024 is ~33 µs of GPU work and 47x faster than the
# broadcast (graph replay); with 20 µs in every 0.5 ms round sized from one call it read ~45x.
GAP = 20e-6
FAST = 33e-6
SLOW = 47 * FAST


def test_the_fake_device_leaves_the_launch_gap_inside_a_round_and_runs_host_bound_calls_at_the_hosts_pace():
    fake = FakeDevice(launch_latency=GAP)
    clock = fake.clock()
    clock()
    t0 = clock()
    fake.launch(100e-6)
    assert clock() - t0 == pytest.approx(GAP + 100e-6, rel=1e-6)
    t0 = clock()
    for _ in range(4):
        fake.launch(100e-6)  # queued behind the first: one gap a round, not one a call
    assert clock() - t0 == pytest.approx(GAP + 400e-6, rel=1e-6)
    t0 = clock()
    for _ in range(4):
        fake.launch(10e-6, host_s=50e-6)  # the host issues slower than the device runs
    assert clock() - t0 == pytest.approx(4 * 50e-6 + GAP + 10e-6, rel=1e-6)
    replay, _ = fake.capture(lambda: [fake.launch(10e-6, host_s=50e-6) for _ in range(4)])
    t0 = clock()
    replay()  # a graph: one launch, the kernels back to back, no host time per kernel
    assert clock() - t0 == pytest.approx(GAP + 40e-6, rel=1e-6)


@pytest.fixture(scope="module")
def timed():
    """The 47x pair timed once on a fake device with the 20 µs gap: the three tests below read it."""
    fake = FakeDevice(launch_latency=GAP)
    with harness_device.installed(fake):
        return pair_benchmark.run(_pair(fake, FAST, SLOW), cap_s=0.05, min_rounds=5, noise_floor=lambda: None)


def test_a_47x_pair_reads_within_2_percent_of_47x_with_a_20us_launch_gap(timed):
    ratio = gain.paired_ratio(timed.slow_s, timed.fast_s)
    assert ratio.point == pytest.approx(47, rel=0.02), f"{ratio.point:.2f}x, iterations {timed.iterations}"


def test_a_cuda_round_holds_at_least_2_ms_of_device_time_sized_from_several_calls(timed):
    """Sized from one call, which carries the gap (53 µs for 33 µs of work), the fast side's round
    held 10 calls: 0.33 ms of work, 6% of it gap."""
    assert timed.iterations["matmul"] * FAST >= 2e-3 and timed.iterations["broadcast"] * SLOW >= 2e-3
    assert timed.iterations["matmul"] * FAST < 2e-3 + FAST, "sized from the gap-free per-call time"


def test_the_in_window_gap_is_fitted_over_1_to_32_calls_and_recorded_with_the_pair(timed):
    assert timed.gap_s == pytest.approx({"matmul": GAP, "broadcast": GAP}, rel=1e-3)
    again = record.PairTiming.from_data(timed.to_data())
    assert again.gap_s == timed.gap_s


def test_a_variant_timed_alone_on_cuda_reads_its_kernel_within_1_percent_and_records_the_gap():
    fake = FakeDevice(launch_latency=GAP)
    with harness_device.installed(fake):
        seconds, info = timing.rounds_by_hand(kernel(fake, FAST, None), "cuda", cap_s=0.05, min_rounds=5)
    assert statistics.median(seconds) == pytest.approx(FAST, rel=0.01)
    assert info["gap_s"] == pytest.approx(GAP, rel=1e-3)
    assert info["iterations"] * FAST >= 2e-3


def test_each_side_of_a_cuda_pair_is_also_timed_as_a_graph_replay_beside_its_event_median():
    """The event-timed rounds run the fast side at the host's pace (75 µs a call); a graph replay
    of several calls gives its GPU time (36 µs), so the GPU-only speed-up is 47x where the rounds
    read ~22x."""
    fake = FakeDevice(launch_latency=GAP)
    with harness_device.installed(fake):
        timed = pair_benchmark.run(host_bound_pair(fake), cap_s=0.05, min_rounds=5, noise_floor=lambda: None)
    assert statistics.median(timed.fast_s) == pytest.approx(75e-6, rel=0.02)
    assert timed.graph_s == pytest.approx({"matmul": 36e-6, "broadcast": 47 * 36e-6}, rel=0.02)
    assert timed.graph_calls["matmul"] > 1
    assert timed.graph_s["broadcast"] / timed.graph_s["matmul"] == pytest.approx(47, rel=0.02)
    assert timed.host_bound() == "matmul"
    again = record.PairTiming.from_data(timed.to_data())
    assert (again.graph_s, again.graph_calls) == (timed.graph_s, timed.graph_calls)


def test_a_side_that_cannot_be_captured_keeps_its_event_figure_and_says_why():
    fake = FakeDevice(launch_latency=GAP)
    pair = _pair(fake, FAST, SLOW)
    syncing = pair.sides["matmul"].fn

    def item(*args):  # .item(): waits for the host, which a capture refuses
        out = syncing(*args)
        fake.synchronize()
        return out

    pair = dataclasses.replace(
        pair, sides={**pair.sides, "matmul": dataclasses.replace(pair.sides["matmul"], fn=item)}
    )
    with harness_device.installed(fake):
        timed = pair_benchmark.run(pair, cap_s=0.05, min_rounds=5, noise_floor=lambda: None)
    assert "matmul" not in timed.graph_s and "broadcast" in timed.graph_s
    assert "synchroniz" in timed.graph_skipped["matmul"]
    assert timed.host_bound() is None  # nothing to tell: no GPU-only figure for the fast side
