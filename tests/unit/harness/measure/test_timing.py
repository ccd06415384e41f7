"""The timer's self-checks, the roofline arithmetic and the timers handed to pytest-benchmark, against
known answers (the ceilings: tests/unit/harness/machine/test_ceilings.py)."""

import statistics

import pytest
import torch

from harness.machine import ceilings
from harness.measure import timing


def test_steady_rounds_raise_no_warning():
    assert timing.timer_warnings([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01]) == []


def test_spread_over_ten_percent_is_flagged_with_its_value():
    rounds = [1.0, 1.3, 0.8, 1.2, 0.9, 1.25, 0.85, 1.0]
    q1, med, q3 = statistics.quantiles(rounds, n=4, method="inclusive")
    (warning,) = timing.timer_warnings(rounds)
    assert warning.startswith("spread:") and f"{(q3 - q1) / med:.0%}" in warning


def test_spread_just_under_the_limit_is_not_flagged():
    # quartiles 0.96 and 1.05 around a median of 1.0: IQR/median = 9%
    assert timing.timer_warnings([0.95, 0.96, 0.99, 1.0, 1.0, 1.01, 1.05, 1.06]) == []


def test_slow_first_rounds_are_flagged_as_warm_up():
    rounds = [5.0, 1.0, 1.0, 1.01, 0.99, 1.0, 1.0, 1.0, 1.0, 1.0]
    (warning,) = timing.timer_warnings(rounds)
    assert warning.startswith("warm-up:") and "first 2 round(s) took 3.0x" in warning  # (5 + 1) / 2
    assert timing.timer_warnings([1.5] + rounds[1:]) == []  # 1.25x: ordinary noise


def test_launch_bound_cuda_timing_is_flagged():
    steady = [1e-5] * 8
    (warning,) = timing.timer_warnings(steady, device_s=2e-6, wall_s=2e-5)
    assert warning.startswith("launch-bound:") and "10%" in warning
    assert timing.timer_warnings(steady, device_s=1.8e-5, wall_s=2e-5) == []


def test_roofline_picks_the_binding_ceiling():
    # 1 GFLOP over 1 GB (intensity 1) on a machine of 100 GFLOP/s and 10 GB/s: memory-bound,
    # bound = 10 GFLOP/s; done in 0.2 s = 5 GFLOP/s = half the bound.
    r = ceilings.roofline(1e9, 1e9, 0.2, peak_flops=100e9, bandwidth=10e9)
    assert r["achieved_flops"] == pytest.approx(5e9) and r["achieved_bytes_per_s"] == pytest.approx(5e9)
    assert r["roofline_fraction"] == pytest.approx(0.5)
    # intensity 100: compute-bound at 100 GFLOP/s; 1 GFLOP in 0.02 s = 50 GFLOP/s.
    assert ceilings.roofline(1e9, 1e7, 0.02, 100e9, 10e9)["roofline_fraction"] == pytest.approx(0.5)
    assert "roofline_fraction" not in ceilings.roofline(None, None, 1.0, 100e9, 10e9)


def test_gemm_key_follows_dtype_and_tf32():
    assert ceilings.gemm_key("cpu", torch.float32) == "fp32_flops"
    assert ceilings.gemm_key("cpu", torch.bfloat16) == "bf16_flops"
    assert ceilings.gemm_key("cuda", torch.float16) == "fp16_flops"
    with ceilings.cuda_tf32(True):
        assert ceilings.gemm_key("cuda", torch.float32) == "tf32_flops"
    with ceilings.cuda_tf32(False):
        assert ceilings.gemm_key("cuda", torch.float32) == "fp32_flops"


def test_tf32_switch_restores_every_recorded_precision_setting():
    from harness import machine

    before = machine.precision_settings()
    with ceilings.cuda_tf32(True):
        assert torch.backends.cuda.matmul.allow_tf32
    assert machine.precision_settings() == before


@pytest.mark.gpu
def test_cold_l2_flush_covers_twice_the_l2():
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    flush = timing.L2Flush("cuda")
    assert flush.buffer.nbytes >= 2 * timing.l2_bytes("cuda") - 4
    flush()


@pytest.mark.gpu
def test_graph_replay_removes_launch_overhead():
    """Fifty tiny kernels: eager pays fifty launches, the replay one; the replay is faster and
    its output is the eager result."""
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    x = torch.randn(256, device="cuda")

    def many():
        y = x
        for _ in range(50):
            y = y * 1.0001
        return y

    replay, out = timing.capture_graph(many, "cuda")
    torch.testing.assert_close(replay(), many())
    eager = timing.wall_median(lambda: (many(), torch.cuda.synchronize()), reps=20)
    graph = timing.wall_median(lambda: (replay(), torch.cuda.synchronize()), reps=20)
    assert graph < 0.7 * eager, f"graph {graph * 1e6:.1f} us vs eager {eager * 1e6:.1f} us"
    busy, wall = timing.device_and_wall_seconds(lambda: x * 2, "cuda")
    assert busy < wall


class _FakeCuda:
    """torch.cuda's stream, graph and sync-debug calls as capture_graph uses them, recorded: the
    capture's failure paths, tried on a machine without a GPU."""

    def __init__(self, capture_fails: bool):
        self.current, self.mode, self.captures, self.capture_fails = "default", "default", 0, capture_fails

    def install(self, monkeypatch):
        import contextlib

        cuda = torch.cuda

        @contextlib.contextmanager
        def stream(s):
            before, self.current = self.current, s
            yield
            self.current = before

        @contextlib.contextmanager
        def graph(g):  # as torch.cuda.graph: the end of a failed capture raises before the stream is restored
            before, self.current = self.current, "capture"
            self.captures += 1
            yield
            if self.capture_fails:
                raise RuntimeError("operation failed due to a previous error during capture")
            self.current = before

        class Stream:
            def __init__(self, device=None):
                pass

            def wait_stream(self, other):
                pass

        monkeypatch.setattr(cuda, "Stream", Stream)
        monkeypatch.setattr(cuda, "stream", stream)
        monkeypatch.setattr(cuda, "graph", graph)
        monkeypatch.setattr(cuda, "CUDAGraph", lambda: object())
        monkeypatch.setattr(
            cuda, "current_stream", lambda device=None: type("S", (), {"wait_stream": lambda *a: None})()
        )
        monkeypatch.setattr(cuda, "set_stream", lambda s: setattr(self, "current", "default"))
        monkeypatch.setattr(cuda, "synchronize", lambda device=None: None)
        monkeypatch.setattr(cuda, "get_sync_debug_mode", lambda: self.mode)
        monkeypatch.setattr(cuda, "set_sync_debug_mode", lambda mode: setattr(self, "mode", mode))
        return self


def test_a_variant_that_waits_for_the_host_is_refused_before_any_capture(monkeypatch):
    fake = _FakeCuda(capture_fails=False).install(monkeypatch)

    def waits_for_host():
        if fake.mode == "error":
            raise RuntimeError("called a synchronizing CUDA operation")

    with pytest.raises(RuntimeError, match="synchronizes with the host"):
        timing.capture_graph(waits_for_host, "cuda")
    assert fake.captures == 0 and fake.mode == "default"


def test_a_failed_capture_leaves_the_default_stream_current(monkeypatch):
    fake = _FakeCuda(capture_fails=True).install(monkeypatch)
    with pytest.raises(RuntimeError, match="during capture"):
        timing.capture_graph(lambda: None, "cuda")
    assert fake.captures == 1 and fake.current == "default"


def test_timing_modes_multiply_cuda_points_only_and_keep_warm_ids():
    from plan import variant_points, with_timing_modes

    points = variant_points("quick", ("cpu", "cuda"))
    expanded = with_timing_modes(points, timing.TIMING_MODES)
    assert [p.id for p in expanded if p.device == "cpu"] == [p.id for p in points if p.device == "cpu"]
    cuda = [p for p in points if p.device == "cuda"]
    compiled = [p for p in cuda if p.variant.role.value == "compiled"]  # one mode: each compiles cold
    assert compiled
    assert len([p for p in expanded if p.device == "cuda"]) == (
        len(timing.TIMING_MODES) * (len(cuda) - len(compiled)) + len(compiled)
    )
    assert [p.id for p in expanded if p.timing == "warm"] == [p.id for p in points]
    graph = next(p for p in expanded if p.timing == "graph")
    assert graph.id.endswith("-cuda-graph") and graph.key.timing_mode == "graph"
    assert "timing_mode" not in points[0].key.to_data()


def test_a_busy_machine_is_flagged_even_when_rounds_are_steady():
    steady = [1.0] * 8
    (warning,) = timing.timer_warnings(steady, load=7.5, cores=2)
    assert warning.startswith("busy machine:") and "7.5 on 2" in warning
    assert timing.timer_warnings(steady, load=1.5, cores=2) == []


def test_a_point_above_its_ceiling_is_flagged():
    from harness.machine.ceilings import above_ceiling_warning

    (warning,) = above_ceiling_warning({"roofline_fraction": 1.26, "ceiling_key": "fp32_flops"})
    assert "1.26x" in warning and "fp32_flops" in warning
    assert above_ceiling_warning({"roofline_fraction": 0.8}) == [] and above_ceiling_warning({}) == []


def test_device_clock_sums_event_intervals_in_float64():
    """The CUDA timer, on a fake device (tests.fake_device.FakeDevice): each reading is the device
    time since the first, built from event-to-event intervals (float32 ms each) so that a late
    reading keeps its microseconds; each reading waits for its event, the one barrier it makes."""
    from harness.measure.timing import DeviceClock
    from tests.fake_device import FakeDevice

    fake = FakeDevice()
    clock = DeviceClock(fake)
    assert clock() == 0.0
    fake.advance(3600.0)  # an hour later: one float32 interval from the origin would lose µs
    start = clock()
    fake.advance(12.3e-6)  # a 12.3 µs kernel
    assert abs((clock() - start) - 12.3e-6) < 1e-9
    assert (fake.event_waits, fake.syncs) == (3, 0)
    assert "DeviceClock" in repr(clock) and clock.name == "cuda_events"


def test_replay_clock_refuses_to_invent_a_step():
    clock = timing.ReplayClock()
    clock.load([0.5])
    start = clock()
    clock.advance()
    assert clock() - start == 0.5
    with pytest.raises(RuntimeError, match="all 1 loaded steps"):
        clock.advance()
