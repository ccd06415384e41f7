"""The device a point runs on, as the harness needs it: a barrier, a clock, peak memory.

Why one interface. On CUDA a figure is the device's time only when the clock is the device's (an
event recorded on the stream at each reading) and no barrier sits between the calls it times. A
host clock around a synchronised call times Python, the launch and the barrier too: the first H100
run read distance.pairwise (n = 1024) as 17.6x host-timed where the device gives ~47x. Every
timing path (a variant's rounds, a pair's, the noise floor's A/A pair, cold-L2 and graph rounds)
asks `of(device)` for its clock, so no path can time with another clock than the rest, and each
records the clock's name (`Device.timer_name`) beside its figures.

`AcceleratorDevice` uses ``torch.accelerator`` (barrier, current stream, memory statistics) and
the generic ``torch.Event``: CUDA, MPS and XPU alike; `CudaDevice` is it with ``torch.cuda`` as the
fallback on a torch without them, its memory capacity and the L2 size. Which CUDA devices this
process can use (`cuda_available`, `cuda_count`, `current_cuda`) is asked here too, so the rest of
the harness and the cases reach CUDA through this module only (tests/unit/properties/test_device_seam.py
counts what is left outside it). `installed` puts another device (the tests' `FakeDevice`) in place
of a device kind for a block. Plain Python over torch; no pytest.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator, Protocol

import torch

from harness.measure import sync_lint

# The names a timing records for the clock behind its figures (PairTiming.timer, a point's
# extra_info["timer"], the noise floor's "timer").
HOST_TIMER = "perf_counter"  # time.perf_counter: the host's clock (the CPU, whose calls end with their work)
DEVICE_TIMER = "cuda_events"  # DeviceClock: events on the stream, a barrier at each reading only
HOST_SYNCHRONIZED = "perf_counter_synchronized"  # the host's clock around calls each ending in a barrier
# The accelerators `of` answers for through torch.accelerator besides CUDA.
ACCELERATORS = ("mps", "xpu")


class Device(Protocol):
    kind: str  # "cpu", "cuda": the torch device type this stands for
    torch_device: torch.device  # where its tensors are made
    timer_name: str  # the name of `clock()`'s clock, recorded with each figure it times

    def synchronize(self) -> None: ...
    def initialized(self) -> bool: ...  # this process holds a context on it (nothing is created to ask)
    def probe(self) -> str | None: ...  # the sticky error its context died of, or None while it works
    def release_cached(self) -> None: ...  # the allocator's cached blocks given back
    def clock(self) -> Callable[[], float]: ...
    def has_allocator_stats(self) -> bool: ...
    def reset_peak_memory(self) -> None: ...
    def memory_allocated(self) -> int: ...
    def max_memory_allocated(self) -> int: ...


class HostDevice:
    """The CPU: its calls return with their work done, so its clock is the host's and its barrier
    nothing. torch keeps no allocator statistics for it (harness.measure replays the profiler's
    allocation events instead)."""

    kind = "cpu"
    timer_name = HOST_TIMER

    def __init__(self, device: torch.device | str = "cpu"):
        self.torch_device = torch.device(device)

    def synchronize(self) -> None:
        pass

    def initialized(self) -> bool:
        return True

    def probe(self) -> str | None:
        return None  # a host error is raised where it happens: nothing sticks

    def release_cached(self) -> None:
        pass

    def clock(self) -> Callable[[], float]:
        return time.perf_counter

    def has_allocator_stats(self) -> bool:
        return False

    def reset_peak_memory(self) -> None:
        raise NotImplementedError("the host has no allocator statistics (harness.measure._cpu_peak)")

    memory_allocated = max_memory_allocated = reset_peak_memory


def _accelerator(name: str):
    """``torch.accelerator.<name>`` where this torch has it (2.6+; memory statistics 2.8+), else None."""
    return getattr(getattr(torch, "accelerator", None), name, None)


class AcceleratorDevice:
    """An accelerator torch reaches through ``torch.accelerator`` (CUDA, Apple's MPS, Intel's XPU,
    torch 2.6+): the barrier, the current stream, memory statistics (2.8+) and the generic
    ``torch.Event`` are the same calls for each. Making one makes no device call. Only CUDA runs
    the suite's cases today (their dtypes, tolerances and memory guards are declared for cpu and
    cuda: harness.run.option_values refuses another device with that reason); the interface is
    the part a new backend needs from the harness."""

    timer_name = DEVICE_TIMER

    def __init__(self, device: torch.device | str):
        self.torch_device = torch.device(device)
        self.kind = self.torch_device.type
        if self.kind != "cuda":
            self.timer_name = f"{self.kind}_events"

    def synchronize(self) -> None:
        _accelerator("synchronize")(self.torch_device)

    def initialized(self) -> bool:
        # torch.accelerator has no "is a context open" query; asking any backend to make one
        # here would create the context this answers about.
        return getattr(getattr(torch, self.kind, None), "is_initialized", lambda: True)()

    def probe(self) -> str | None:
        """A sticky error makes every call on a dead context raise, so a one-element allocation
        and a synchronize are enough. Out of memory is not sticky (the next test may fit)."""
        if not self.initialized():
            return None
        try:
            torch.empty(1, device=self.torch_device).add_(1)
            self.synchronize()
        except torch.OutOfMemoryError:
            return None
        except RuntimeError as exc:  # torch.AcceleratorError (torch >= 2.8) is a RuntimeError
            return str(exc)
        return None

    def release_cached(self) -> None:
        _accelerator("empty_cache")()

    def current_stream(self):
        return _accelerator("current_stream")(self.torch_device)

    def event(self):
        """An event that can time: recorded on the current stream, waited for, subtracted (ms)."""
        return torch.Event(self.torch_device, enable_timing=True)

    def clock(self) -> Callable[[], float]:
        return DeviceClock(self)

    def has_allocator_stats(self) -> bool:
        return _accelerator("max_memory_allocated") is not None

    def reset_peak_memory(self) -> None:
        _accelerator("reset_peak_memory_stats")(self.torch_device)

    def memory_allocated(self) -> int:
        return _accelerator("memory_allocated")(self.torch_device)

    def max_memory_allocated(self) -> int:
        return _accelerator("max_memory_allocated")(self.torch_device)


class CudaDevice(AcceleratorDevice):
    """A CUDA device: `AcceleratorDevice`, with ``torch.cuda`` where the installed torch lacks
    ``torch.accelerator`` or ``torch.Event``, and the L2 size the cold-L2 rounds flush."""

    def __init__(self, device: torch.device | str = "cuda"):
        super().__init__(device)

    def synchronize(self) -> None:
        (_accelerator("synchronize") or torch.cuda.synchronize)(self.torch_device)

    def initialized(self) -> bool:
        return torch.cuda.is_initialized()

    def release_cached(self) -> None:
        (_accelerator("empty_cache") or torch.cuda.empty_cache)()

    def current_stream(self):
        return (_accelerator("current_stream") or torch.cuda.current_stream)(self.torch_device)

    def event(self):
        if hasattr(torch, "Event"):
            return torch.Event(self.torch_device, enable_timing=True)
        return torch.cuda.Event(enable_timing=True)

    def has_allocator_stats(self) -> bool:
        return True

    def reset_peak_memory(self) -> None:
        (_accelerator("reset_peak_memory_stats") or torch.cuda.reset_peak_memory_stats)(self.torch_device)

    def memory_allocated(self) -> int:
        return (_accelerator("memory_allocated") or torch.cuda.memory_allocated)(self.torch_device)

    def max_memory_allocated(self) -> int:
        return (_accelerator("max_memory_allocated") or torch.cuda.max_memory_allocated)(self.torch_device)

    def usable_bytes(self) -> int:
        """Bytes a new allocation can get now: the driver's free memory plus the blocks PyTorch's
        allocator holds cached (the driver counts those as used; the allocator reuses them, and
        releases them and retries before it reports out of memory)."""
        free, _ = torch.cuda.mem_get_info(self.torch_device)
        cached = torch.cuda.memory_reserved(self.torch_device) - torch.cuda.memory_allocated(
            self.torch_device
        )
        return free + cached

    def total_bytes(self) -> int:
        return torch.cuda.get_device_properties(self.torch_device).total_memory

    def name(self) -> str:
        return torch.cuda.get_device_name(self.torch_device)

    def capability(self) -> tuple[int, int]:
        return torch.cuda.get_device_capability(self.torch_device)

    def properties(self):
        return torch.cuda.get_device_properties(self.torch_device)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """This device as the current CUDA device for the block (kernels and events default to it)."""
        with torch.cuda.device(self.torch_device):
            yield

    def capture(self, fn: Callable[[], object]) -> tuple[Callable[[], object], object]:
        """(replay, output): one call of `fn` captured in a CUDA graph.

        The replay does not wait for the device: a timing reads the device's clock around its
        replays (or wraps it in `measure.synchronized`), and a check reading the output waits on
        the stream. The warm-up calls run on a side stream, as capture requires (the caching
        allocator and cuBLAS workspaces must be set up before capture; lazy init inside a capture
        is an error). The returned output tensors are overwritten by each replay."""
        dev = self.torch_device
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            fn()  # lazy initialisation first: it may synchronize once, legitimately
            try:
                with sync_lint.synchronizing_calls_raise():
                    fn()
            except RuntimeError as exc:
                # Finding a host wait out inside a capture invalidates it.
                raise RuntimeError(f"synchronizes with the host: {str(exc).splitlines()[0][:200]}") from exc
            fn()
        torch.cuda.current_stream(dev).wait_stream(side)
        torch.cuda.synchronize(dev)
        graph = torch.cuda.CUDAGraph()
        previous = torch.cuda.current_stream(dev)
        try:
            with torch.cuda.graph(graph):
                out = fn()
        except BaseException:
            # torch.cuda.graph's exit ends the capture before it restores the stream: when the end
            # raises (an invalidated capture), the capture stream would stay current for every
            # later test of the run.
            torch.cuda.set_stream(previous)
            raise
        torch.cuda.synchronize(dev)

        def replay():
            graph.replay()
            return out

        replay.graph = graph  # keeps the graph (and its memory pool) alive with the callable
        return replay, out

    def l2_bytes(self) -> int:
        """The L2 size (``L2_cache_size`` is in the properties since torch 2.1)."""
        props = torch.cuda.get_device_properties(self.torch_device)
        return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)  # 50 MiB: H100/H200


class DeviceClock:
    """A clock that reads the device's time: each reading records an event on the current stream
    and waits for it (the one barrier of a reading); the value is the device time since the first.

    Given to pytest-benchmark as a point's timer (``pytest.mark.benchmark(timer=...)``), or to
    `harness.measure.interleave` as a pair's clock, it turns a round of back-to-back calls into the device
    time of that round, with no barrier inside it. The value accumulates event-to-event intervals
    in float64, because one event pair's float32 milliseconds would lose microseconds once the
    origin lies minutes back. No device call happens before the first reading.
    """

    def __init__(self, device: Device | torch.device | str = "cuda"):
        self.device = device if hasattr(device, "event") else of(device)
        self._last = None
        self._total = 0.0

    @property
    def name(self) -> str:
        return self.device.timer_name

    def __call__(self) -> float:
        event = self.device.event()
        event.record(self.device.current_stream())
        event.synchronize()
        if self._last is not None:
            self._total += self._last.elapsed_time(event) / 1e3
        self._last = event
        return self._total

    def __repr__(self) -> str:  # pytest-benchmark stores the timer's name in the results JSON
        return f"harness.measure.timing.DeviceClock({self.device.torch_device.type})"


def timer_name(clock) -> str:
    """The recorded name of a clock: a DeviceClock's device's, else the host's."""
    return getattr(clock, "name", HOST_TIMER)


_installed: dict[str, Device] = {}


def of(device: torch.device | str) -> Device:
    """The device `device` names (a fake where one is `installed` for its kind)."""
    dev = torch.device(device)
    if dev.type in _installed:
        return _installed[dev.type]
    if dev.type == "cuda":
        return CudaDevice(dev)
    if dev.type in ACCELERATORS:
        return AcceleratorDevice(dev)
    return HostDevice(dev)


# ---- discovery: which CUDA devices this process can use -------------------------------------------
# Asked here, not through `of`: answering needs no device object, and nothing here creates a context
# beyond what torch.cuda's own queries do.


def cuda_available() -> bool:
    return torch.cuda.is_available()


def cuda_count() -> int:
    """GPUs this process can use (CUDA_VISIBLE_DEVICES applies); 0 without CUDA."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def current_cuda() -> CudaDevice:
    """The current CUDA device, with its index (a bare "cuda" names no GPU in particular)."""
    return CudaDevice(torch.device("cuda", torch.cuda.current_device()))


def cuda(index: int) -> CudaDevice:
    return CudaDevice(torch.device("cuda", index))


@contextlib.contextmanager
def installed(fake: Device) -> Iterator[Device]:
    """`fake` answers `of()` for its kind during the block."""
    previous = _installed.get(fake.kind)
    _installed[fake.kind] = fake
    try:
        yield fake
    finally:
        if previous is None:
            del _installed[fake.kind]
        else:
            _installed[fake.kind] = previous
