"""The measurement helpers against known answers: sleeps of known length, allocations of known size."""

import time

import pytest
import torch

from harness import measure


def test_synchronized_calls_cuda_barrier_after_the_work(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(("sync", device)))
    wrapped = measure.synchronized(lambda: calls.append("work") or 42, "cuda")
    assert wrapped() == 42
    assert calls == ["work", ("sync", torch.device("cuda"))]


def test_synchronized_is_identity_on_cpu():
    fn = lambda: 1  # noqa: E731
    assert measure.synchronized(fn, "cpu") is fn


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
        return torch.tanh(h) * torch.tanh(h)  # tanh saves its output; mul saves both operands (the same two storages)

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


def test_compare_rejects_shape_mismatch():
    with pytest.raises(AssertionError, match="shape"):
        measure.compare(torch.zeros(3), torch.zeros(3, 1, dtype=torch.float64), 1e-5, 0)


def test_out_of_memory_is_recognised():
    assert measure.is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert measure.is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not measure.is_out_of_memory(RuntimeError("shape mismatch"))
