"""The measurement helpers (harness/measure/__init__.py) against known answers: sleeps of known length,
allocations of known size; a profiled call stays interruptible and its profiler always stops."""

import math
import os
import signal
import time

import pytest
import torch

from cases.spec import Tol
from harness import measure


class _Stopped(Exception):
    pass


def _profiler_running() -> bool:
    import torch

    return torch.autograd.profiler._is_profiler_enabled


def test_a_profiled_call_is_interruptible_and_the_profiler_always_stops(monkeypatch):
    """harness.measure.profiled holds signals only while the profiler starts and stops: a signal
    in the profiled code interrupts it at once, and one that lands while the profiler starts is
    raised once it has started, inside the block that stops it again (a profiler left running
    segfaulted the process at exit)."""
    from torch.profiler import profile

    from harness import measure

    def stop(signum, frame):
        raise _Stopped(signum)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        reached = []
        with pytest.raises(_Stopped):
            with measure.profiled():
                os.kill(os.getpid(), signal.SIGTERM)
                reached.append("after the signal")
        assert reached == [] and not _profiler_running()

        real_enter = profile.__enter__

        def enter_then_signal(self):
            started = real_enter(self)
            os.kill(os.getpid(), signal.SIGTERM)  # lands between the start and the body
            return started

        monkeypatch.setattr(profile, "__enter__", enter_then_signal)
        with pytest.raises(_Stopped):
            with measure.profiled():
                reached.append("body")
        assert reached == [] and not _profiler_running()
    finally:
        signal.signal(signal.SIGTERM, before)


def test_synchronized_calls_cuda_barrier_after_the_work():
    from harness.measure.device import installed
    from tests.fake_device import FakeDevice

    with installed(FakeDevice()) as fake:
        wrapped = measure.synchronized(lambda: fake.log.append("work") or 42, "cuda")
        assert wrapped() == 42
    assert fake.log == ["work", "sync"]


def test_synchronized_is_identity_on_cpu():
    fn = lambda: 1  # noqa: E731
    assert measure.synchronized(fn, "cpu") is fn


@pytest.mark.timing
def test_benchmark_median_matches_a_known_sleep(benchmark):
    """The timer path the suite uses (benchmark fixture around a synchronized callable) reports
    the duration of the work: a 20 ms sleep is measured as 20 ms, within scheduler noise."""
    benchmark.pedantic(measure.synchronized(lambda: time.sleep(0.02), "cpu"), rounds=5, iterations=1)
    if benchmark.disabled:
        pytest.skip("timing disabled (--benchmark-disable)")
    assert 0.02 <= benchmark.stats.stats.median < 0.03


@pytest.mark.gpu
def test_cuda_sleep_is_timed_to_completion():
    """torch.cuda._sleep(cycles) returns at once and keeps the GPU busy: a timer that does not
    wait for the device measures microseconds. Timed through `synchronized`, the wall time must
    cover the sleep as CUDA events measure it."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    cycles = 50_000_000
    torch.cuda._sleep(cycles)  # warm-up
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    device_seconds = start.elapsed_time(end) / 1e3
    assert device_seconds > 0.005, "the sleep should last milliseconds"

    def wall(fn):
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    unsynced = wall(lambda: torch.cuda._sleep(cycles))
    torch.cuda.synchronize()
    synced = wall(measure.synchronized(lambda: torch.cuda._sleep(cycles), "cuda"))
    assert synced >= 0.9 * device_seconds
    assert unsynced < 0.5 * device_seconds, "the launch alone should return before the work ends"


def test_cpu_peak_memory_sees_every_allocation():
    x = torch.randn(256, 256)  # 256 KiB, allocated before: not counted

    def work():
        a = torch.empty(1024, 1024)  # 4 MiB
        b = torch.empty(512, 1024)  # 2 MiB, live together with a: peak 6 MiB
        del a, b
        return x + 1  # 256 KiB result, after the frees

    result, peak = measure.peak_memory(work, "cpu")
    assert result.shape == x.shape
    assert peak == 6 * 2**20


def test_cpu_peak_memory_counts_a_returned_tensor():
    _, peak = measure.peak_memory(lambda: torch.ones(2**20, dtype=torch.float64), "cpu")
    assert peak == 8 * 2**20


def test_saved_tensor_bytes_counts_each_storage_once_and_leaves_out_parameters():
    lin = torch.nn.Linear(64, 64, bias=False)
    x = torch.randn(32, 64, requires_grad=True)

    def forward():
        h = lin(x)  # saves x (excluded) and the weight (excluded)
        return torch.tanh(h) * torch.tanh(
            h
        )  # tanh saves its output; mul saves both operands (the same two storages)

    _, saved = measure.saved_tensor_bytes(forward, exclude=(x, *lin.parameters()))
    # two distinct tanh outputs of 32x64 fp32 = 2 * 8 KiB
    assert saved == 2 * 32 * 64 * 4


def test_compare_reports_worst_element_and_nan():
    truth = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    err = measure.compare(torch.tensor([1.0, 2.0, 4.001]), truth, rtol=1e-5, atol=0)
    assert not err.within and "(2,)" in err.worst
    assert err.max_rel == pytest.approx(0.001 / 4, rel=1e-3)
    assert measure.compare(truth.float(), truth, rtol=1e-6, atol=0).within
    assert not measure.compare(torch.tensor([1.0, float("nan"), 4.0]), truth, rtol=1, atol=1).within


def test_floor_follows_each_truths_own_scale():
    """One Tol for outputs near 512 and near 2: a floor in units of max|truth| holds both to the
    same relative bound, where one absolute atol fitted to 512 lets a 5e-4 bias through at 2."""
    g = torch.Generator().manual_seed(0)
    near_512 = 512 + torch.rand(1000, generator=g, dtype=torch.float64)
    near_2 = 1.9 + 0.1 * torch.rand(1000, generator=g, dtype=torch.float64)
    tol = Tol(rtol=1e-6, floor=1e-5)
    for truth in (near_512, near_2):
        assert measure.within_tol(truth * (1 + 5e-6), truth, tol).within
        assert not measure.within_tol(truth * (1 + 5e-4), truth, tol).within
    assert measure.compare(near_2 * (1 + 5e-4), near_2, rtol=1e-5, atol=1e-3).within  # the scale-blind floor


def test_floor_covers_zeros_where_relative_error_means_nothing():
    truth = torch.tensor([1.0, 1e-9, -0.5], dtype=torch.float64)
    assert measure.compare(truth + 1e-7, truth, rtol=1e-6, floor=2e-7).within
    err = measure.compare(truth + 1e-7, truth, rtol=1e-6)
    assert not err.within and "(1,)" in err.worst  # only the near-zero element is past rtol alone


def test_norm_wise_bound():
    truth = torch.linspace(1, 2, 10_000, dtype=torch.float64)
    kink = truth.clone()
    kink[7] += 1e-3  # one element far off, the tensor as a whole within rounding
    assert measure.compare(kink, truth, norm=1e-5).within
    assert not measure.compare(kink, truth, rtol=1e-5).within
    err = measure.compare(truth * (1 + 1e-4), truth, norm=1e-5)
    assert not err.within and "||got - truth||" in err.worst
    assert not measure.compare(torch.full_like(truth, float("nan")), truth, norm=1.0).within


def test_worst_is_the_output_furthest_past_its_own_bound():
    small, large = torch.ones(4, dtype=torch.float64), torch.full((4,), 1000.0, dtype=torch.float64)
    err = measure.compare((small * 1.01, large * 1.5), (small, large), rtol=1e-3)
    assert not err.within and err.worst.startswith("output 1")


def test_tol_rejects_mixed_or_negative_bounds_and_says_what_it_is():
    with pytest.raises(ValueError):
        Tol(rtol=1e-5, norm=1e-5)
    with pytest.raises(ValueError):
        Tol(rtol=-1.0)
    assert "floor=1e-05*max|truth|" in str(Tol(rtol=1e-6, floor=1e-5))
    assert str(Tol(norm=2e-6)) == "||got - truth|| <= 2e-06*||truth||"
    assert Tol(0, 0) == Tol()  # positional (rtol, atol) as before: exact


def test_compare_rejects_shape_mismatch():
    with pytest.raises(AssertionError, match="shape"):
        measure.compare(torch.zeros(3), torch.zeros(3, 1, dtype=torch.float64), 1e-5, 0)


def test_out_of_memory_is_recognised():
    assert measure.is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert measure.is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not measure.is_out_of_memory(RuntimeError("shape mismatch"))


def test_a_gpu_budget_counts_the_allocator_cache_as_free(monkeypatch):
    """Blocks PyTorch's allocator keeps cached look used to the driver; the allocator reuses them,
    so the budget counts them (an H100 skipped a 64 GiB point with 48 GiB of them cached)."""
    gib = 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda d=None: (10 * gib, 80 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d=None: 60 * gib)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d=None: 12 * gib)
    assert measure.memory_budget("cuda") == int(0.9 * (10 + 48) * gib)


@pytest.mark.parametrize("norm, nan", [(None, False), (None, True), (1e-3, False)])
def test_compare_in_chunks_agrees_with_one_pass(monkeypatch, norm, nan):
    """Large outputs are compared a chunk at a time (memory): the answer, the worst element and
    its index are those of a single pass, wherever the chunk boundaries fall."""
    g = torch.Generator().manual_seed(0)
    truth = torch.randn(5, 13, generator=g, dtype=torch.float64)
    got = truth.float().clone()
    got[3, 11] += 0.5  # flat 50: the 8th chunk of 7 elements, not its first element
    if nan:
        got[4, 5] = float("nan")  # flat 57, a later chunk: NaN is always the worst
    whole = measure.compare(got, truth, rtol=1e-6, atol=1e-6, norm=norm)
    monkeypatch.setattr(measure, "COMPARE_CHUNK", 7)
    chunked = measure.compare(got, truth, rtol=1e-6, atol=1e-6, norm=norm)
    assert not chunked.within and not whole.within
    assert chunked.worst == whole.worst
    assert chunked.max_abs == whole.max_abs
    assert math.isclose(chunked.max_rel, whole.max_rel)
    if norm is None:
        assert ("(4, 5)" if nan else "(3, 11)") in chunked.worst, chunked.worst
    assert measure.compare(truth.float(), truth, rtol=1e-6, atol=0.0, norm=norm).within


def test_the_machine_is_measured_once_per_device_and_only_what_was_measured_is_recorded(monkeypatch):
    from harness.machine import ceilings, noise
    from harness.machine.machine_measures import MachineMeasures

    calls = []
    monkeypatch.setattr(ceilings, "measured", lambda d: calls.append(d) or ({"gemm": 1.0}, {"how": d}))
    monkeypatch.setattr(noise, "measured", lambda d: calls.append(f"noise {d}") or {"floor": 0.02})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    machine = MachineMeasures(("cpu", "cuda"))
    info = {}
    machine.into(info)
    assert info == {}  # a run that timed nothing says nothing of the machine's speed
    assert machine.ceilings_for("cuda:0") == {}  # no GPU here: none measured, none made up
    assert machine.ceilings_for("cpu") == {"gemm": 1.0}
    assert machine.noise_floor("cpu") == machine.noise_floor("cpu") == 0.02
    assert calls.count("noise cpu") == 1 and "cuda" not in calls
    machine.into(info)
    assert info == {
        "ceilings": {"cpu": {"gemm": 1.0}},
        "ceilings_detail": {"cpu": {"how": "cpu"}},
        "noise_floor": {"cpu": {"floor": 0.02}},
    }
