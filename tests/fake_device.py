"""`FakeDevice`: a stand-in for a CUDA device on a machine without a GPU.

Its events read a counter that its fake kernels move (`launch`, `advance`), every barrier is
counted, host issue time and a launch latency are modelled, and it captures and replays like a CUDA
graph, so a test (or `.ci/gpu_timer_probe.py --fake`) sees what a timing path would ask of a GPU.
Put one in place of the "cuda" kind with `harness.measure.device.installed`. It lives with the
tests: nothing the suite ships measures on it.
"""

from __future__ import annotations

from typing import Callable

import torch

from harness.measure.device import DEVICE_TIMER, DeviceClock


class FakeDevice:
    """A CUDA device for tests on a machine without one. Its time is a counter: the test's fake
    kernels move it (`advance`, `launch`), or `ticks` supplies it (``time.perf_counter`` for a
    device that follows the host). Its events read the counter when recorded and hand back float32
    milliseconds as CUDA's do; every barrier is counted, a device synchronize in `syncs` and an
    event's wait in `event_waits`, and `log` keeps them in order beside what the test appends
    (its calls), so a test can see where the barriers fall. Tensors live on the host.

    The host and the device keep separate time, as on a GPU: a kernel the host launches starts
    when the device's queue is free and `launch_latency` after the host issued it, whichever is
    later, and the host spends `host_s` issuing it (Python, dispatch). A wait (an event's, a
    synchronize) brings the host to the device. So after a clock's reading has waited, the
    device sits idle for the launch latency before the round's first kernel, inside the round's
    window (the gap a real GPU shows: docs/measuring.md), and a call whose host issue time
    exceeds its kernels' runs at the host's pace. With neither (the defaults) every kernel starts
    where the last ended, the counter of before. `capture` records a call's kernels as a CUDA
    graph does; its replay launches them as one, with one launch latency and no host cost."""

    kind = "cuda"
    timer_name = DEVICE_TIMER

    def __init__(
        self, ticks: Callable[[], float] | None = None, l2: int = 2**20, launch_latency: float = 0.0
    ):
        self.torch_device = torch.device("cpu")
        self._ticks = ticks
        self.launch_latency = launch_latency
        self._queue_end = 0.0  # when the device finishes what was launched
        self._host = 0.0  # the host's time: moved by its issue costs and its waits
        self._capturing: list[float] | None = None
        self.syncs = 0
        self.event_waits = 0
        self.launches = 0
        self.log: list[str] = []
        self._l2 = l2
        self.allocated = 0
        self.peak = 0
        self.dead: str | None = None  # the sticky error `kill` planted: every later call raises it
        self.out_of_memory = False  # the probe's allocation runs out of memory (not sticky)
        self.released = 0

    def kill(self, message: str) -> None:
        """The context dies as a kernel's device-side assert kills a real one."""
        self.dead = message

    def _raise_if_dead(self) -> None:
        if self.dead is not None:
            raise (torch.AcceleratorError if hasattr(torch, "AcceleratorError") else RuntimeError)(self.dead)

    def initialized(self) -> bool:
        return True

    def probe(self) -> str | None:
        if self.out_of_memory:
            return None
        try:
            self._raise_if_dead()
            self.synchronize()
        except RuntimeError as exc:
            return str(exc)
        return None

    def release_cached(self) -> None:
        self._raise_if_dead()  # on a dead context the frees fail too
        self.released += 1

    @property
    def now(self) -> float:
        """What an event recorded now reads: the end of the queue, or the host's time where the
        device is idle."""
        return self._ticks() if self._ticks is not None else max(self._queue_end, self._host)

    def launch(self, seconds: float, host_s: float = 0.0) -> None:
        """A kernel of `seconds` of device time, issued by the host in `host_s`."""
        if self._capturing is not None:
            self._capturing.append(seconds)
            return
        self._host += host_s
        self._queue_end = max(self._queue_end, self._host + self.launch_latency) + seconds
        self.launches += 1

    def advance(self, seconds: float) -> None:
        self.launch(seconds)

    def _wait(self, until: float) -> None:
        self._host = max(self._host, until)

    def _refuse_in_capture(self) -> None:
        if self._capturing is not None:  # as CUDA refuses a wait during a capture
            raise RuntimeError("operation not permitted when stream is capturing: the call synchronizes")

    def synchronize(self) -> None:
        self._raise_if_dead()
        self._refuse_in_capture()
        self.syncs += 1
        self.log.append("sync")
        self._wait(self._queue_end)

    def current_stream(self):
        return "fake-stream"

    def event(self):
        return _FakeEvent(self)

    def clock(self) -> Callable[[], float]:
        return DeviceClock(self)

    def capture(self, fn: Callable[[], object]) -> tuple[Callable[[], object], object]:
        """(replay, output) of `fn` captured as a CUDA graph: the kernels its one call launches,
        replayed back to back after one launch latency, with no host time per kernel. A device
        that follows the host (`ticks`) replays by calling `fn`."""
        self._raise_if_dead()
        if self._ticks is not None:
            return fn, fn()
        self._capturing = []
        try:
            out = fn()
        finally:
            kernels, self._capturing = self._capturing, None
        total = sum(kernels)

        def replay():
            self.launch(total)
            self.log.append("replay")
            return out

        return replay, out

    @property
    def barriers(self) -> int:
        return self.syncs + self.event_waits

    def has_allocator_stats(self) -> bool:
        return True

    def reset_peak_memory(self) -> None:
        self.peak = self.allocated

    def memory_allocated(self) -> int:
        return self.allocated

    def max_memory_allocated(self) -> int:
        return self.peak

    def l2_bytes(self) -> int:
        return self._l2


class _FakeEvent:
    def __init__(self, device: FakeDevice):
        self._device = device
        self.at: float | None = None

    def record(self, stream=None) -> None:
        self.at = self._device.now

    def synchronize(self) -> None:
        self._device._refuse_in_capture()
        self._device.event_waits += 1
        self._device.log.append("read")
        if self.at is not None and self._device._ticks is None:
            self._device._wait(self.at)

    def elapsed_time(self, end: _FakeEvent) -> float:
        if self.at is None or end.at is None:
            raise RuntimeError("elapsed_time of an event that was never recorded")
        return float(torch.tensor((end.at - self.at) * 1e3, dtype=torch.float32))
