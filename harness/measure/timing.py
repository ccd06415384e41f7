"""How a point's call is timed in each mode, and the timer's self-checks. Plain functions: the
fixture they drive is pytest-benchmark's, handed in by the pytest glue in suite/.

Timing modes (what "the time of a call" means on a GPU):

* ``warm``: back-to-back calls. Inputs and weights sit in L2 from the previous call when they
  fit; this is the steady state of a training loop.
* ``cold_l2``: a buffer the size of twice the L2 is written before each call (outside the timed
  region), so the call reads its inputs from HBM, as the first use of a tensor does. NVBench and
  ``triton.testing.do_bench`` flush the same way; twice the L2 because the replacement policy is
  not strict LRU and one L2's worth of writes can leave lines resident.
* ``graph``: the call captured once in a CUDA graph and replayed; the CPU-side cost of launching
  each kernel is gone. Against ``warm`` it gives the launch-overhead fraction
  1 - graph / eager: the share of a call's time the GPU spends waiting for the CPU.

Self-checks (``timer_warnings``) flag a point whose numbers should not be trusted as they are:
spread over `harness.contract.rounds.SPREAD_LIMIT` (IQR/median), first rounds much slower than the median
(compilation, autotuning, allocator growth left in the timed region), and a CUDA time that is
mostly host overhead (the GPU busy for a small part of the wall time: the number measures Python
and the launch, not the kernel).

On CUDA every mode is timed by the device's clock (``DeviceClock``, harness.measure.device): events
recorded at the start and end of each round, the round's calls back to back with no barrier
between them, the clock waiting for the device at its readings only. Host time around a
synchronised call is kept only where a caller hands no clock (``perf_counter_synchronized``);
``extra_info["timer"]`` names the clock either way.

Timers handed to pytest-benchmark (``pytest.mark.benchmark(timer=...)``): ``DeviceClock`` reads
the GPU's clock; ``ReplayClock`` reads back times measured elsewhere (a launch's ranks, or a
variant's side of its pair's interleaved rounds: `replayed_rounds`).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from harness import measure
from harness.contract import rounds
from harness.contract.rounds import SPREAD_LIMIT
from harness.host import load
from harness.measure import device as harness_device
from harness.measure import interleave
from harness.measure.device import DeviceClock  # noqa: F401  (its name in marks, results and tests)

TIMING_MODES = ("warm", "cold_l2", "graph")
CUDA_ONLY_MODES = ("cold_l2", "graph")

FIRST_ROUNDS_LIMIT = 2.0  # first rounds' mean / median
LAUNCH_BOUND_LIMIT = 0.5  # GPU-busy time / wall time below this: host-bound


def l2_bytes(device: torch.device | str) -> int:
    """The L2 size of a CUDA device (``L2_cache_size`` is in the properties since torch 2.1)."""
    return harness_device.of(device).l2_bytes()


class L2Flush:
    """Writes a buffer of twice the device's L2: the setup of a cold-L2 round. With `wait`, it
    also waits for the write, as a host clock started after it needs; a device clock needs no
    barrier here, since its start event is recorded after the write on the same stream."""

    def __init__(self, device: torch.device | str, wait: bool = True):
        self.device = harness_device.of(device)
        self.wait = wait
        self.buffer = torch.empty(
            2 * self.device.l2_bytes() // 4, dtype=torch.int32, device=self.device.torch_device
        )

    def __call__(self) -> None:
        self.buffer.zero_()
        if self.wait:
            self.device.synchronize()


def capture_graph(fn: Callable[[], Any], device: torch.device | str) -> tuple[Callable[[], Any], Any]:
    """Capture one call of `fn` in a CUDA graph; return (replay, the graph's output): the device's
    own capture (harness.measure.device.CudaDevice.capture, or a fake's)."""
    return harness_device.of(device).capture(fn)


class ReplayClock:
    """A timer for pytest-benchmark that reads back times measured elsewhere: the steps that a
    launch's ranks timed themselves (device synchronized before each clock read), which the
    pytest process cannot time, and a variant's side of its pair's rounds (timed once, for the
    pair and for the variant's own row).

    Given to pytest-benchmark as an item's timer (``pytest.mark.benchmark(timer=...)``) and run as
    ``load(seconds)``, then ``benchmark.pedantic(advance, setup=rewind, rounds=len(seconds))``:
    each round reads the clock, calls `advance`, which moves it by the next step's time, and reads
    it again, so ``stats.data`` holds the measured steps and pytest-benchmark's statistics, JSON
    and ``--benchmark-compare`` work on them as on any row. `rewind` (pedantic's untimed setup)
    starts every round at zero, so each round's difference is the step's time to the bit rather
    than a difference of two running sums.
    """

    def __init__(self):
        self._steps: list[float] = []
        self._next = 0
        self._now = 0.0

    def load(self, seconds) -> None:
        self._steps, self._next, self._now = [float(s) for s in seconds], 0, 0.0

    def rewind(self) -> None:
        self._now = 0.0

    def advance(self) -> None:
        if self._next >= len(self._steps):
            raise RuntimeError(f"ReplayClock: all {len(self._steps)} loaded steps were replayed")
        self._now += self._steps[self._next]
        self._next += 1

    def __call__(self) -> float:
        return self._now

    def __repr__(self) -> str:  # pytest-benchmark stores the timer's name in the results JSON
        return "harness.measure.timing.ReplayClock"


def device_and_wall_seconds(
    fn: Callable[[], Any], device: torch.device | str, reps: int = 10, warmup: bool = True
) -> tuple[float, float]:
    """Median GPU-busy seconds (CUDA events around the call) and median wall seconds (call +
    barrier) over `reps` calls. Their ratio tells whether a timing measures the kernels or the
    host: for one small kernel the events see microseconds while the wall clock sees the Python
    call, the launch and the synchronisation."""
    dev = harness_device.of(device)
    stream = dev.current_stream()
    device_s, wall_s = [], []
    if warmup:
        fn()
    dev.synchronize()
    for _ in range(reps):
        start, end = dev.event(), dev.event()
        t0 = time.perf_counter()
        start.record(stream)
        fn()
        end.record(stream)
        dev.synchronize()
        wall_s.append(time.perf_counter() - t0)
        device_s.append(start.elapsed_time(end) / 1e3)
    return statistics.median(device_s), statistics.median(wall_s)


def wall_median(fn: Callable[[], Any], reps: int = 10, budget_s: float = 1.0) -> float:
    """Median wall seconds of `fn` (which must itself end with the device idle)."""
    return clock_median(fn, time.perf_counter, reps, budget_s)


def clock_median(fn: Callable[[], Any], clock, reps: int = 10, budget_s: float = 1.0) -> float:
    """Median seconds of one call of `fn` on `clock` (a device clock, or the host's around a call
    that ends with the device idle), after one warm-up call; `reps` calls within `budget_s` of
    wall time, at least 3."""
    fn()
    times, start = [], time.perf_counter()
    while len(times) < 3 or (len(times) < reps and time.perf_counter() - start < budget_s):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def _quartiles(data: list[float]) -> tuple[float, float, float]:
    q1, median, q3 = statistics.quantiles(data, n=4, method="inclusive")
    return q1, median, q3


def timer_warnings(
    rounds: list[float],
    device_s: float | None = None,
    wall_s: float | None = None,
    load: float | None = None,
    cores: int | None = None,
) -> list[str]:
    """What makes the rounds' median doubtful, one sentence each with the numbers; [] if nothing.

    `rounds` are the per-call seconds of each timed round in order (pytest-benchmark's
    ``stats.data``); `device_s`/`wall_s` the GPU-busy and wall seconds of one call (CUDA only);
    `load`/`cores` the 1-minute load average after the rounds and the cores this process may use.
    A machine busy throughout slows every round alike: no spread shows it, the load does.
    """
    out = []
    if load is not None and cores and load > cores:
        out.append(
            f"busy machine: load average {load:.1f} on {cores} usable cores; other work shared the "
            f"CPU during these rounds (multi-threaded kernels suffer most)"
        )
    if len(rounds) >= 4:
        q1, median, q3 = _quartiles(rounds)
        if median > 0 and (q3 - q1) / median > SPREAD_LIMIT:
            out.append(
                f"spread: IQR/median = {(q3 - q1) / median:.0%} over {len(rounds)} rounds "
                f"(limit {SPREAD_LIMIT:.0%}); the machine was busy or the work varies between calls"
            )
    if len(rounds) >= 5:
        median = statistics.median(rounds)
        head = rounds[: max(1, min(3, len(rounds) // 5))]
        ratio = statistics.fmean(head) / median if median > 0 else 0.0
        if ratio > FIRST_ROUNDS_LIMIT:
            out.append(
                f"warm-up: the first {len(head)} round(s) took {ratio:.1f}x the median "
                f"(compilation, autotuning or allocator growth inside the timed region)"
            )
    if device_s is not None and wall_s:
        busy = device_s / wall_s
        if busy < LAUNCH_BOUND_LIMIT:
            out.append(
                f"launch-bound: GPU busy {device_s * 1e6:.1f} us of {wall_s * 1e6:.1f} us wall "
                f"({busy:.0%}); the time is host overhead (Python, launch, sync), not the kernels"
            )
    return out


def timed_rounds(
    benchmark,
    call: Callable[[], Any],
    device: str,
    mode: str,
    *,
    max_time_s: float,
    min_rounds: int,
    cap_s: float | None = None,
    replay=None,
    clock=None,
) -> tuple[Any, dict]:
    """Time `call` in `mode` with `benchmark` (pytest-benchmark's fixture, so its JSON, calibration
    and comparisons keep working); return the output of its last timed call (for the check after
    the rounds; under --benchmark-disable, of its one call) and the extra_info the mode adds (mode,
    the clock, rounds plan, launch-overhead fraction, GPU-busy vs wall time, warnings).

    ``warm`` and ``graph`` rounds are planned for precision (harness.contract.rounds) within `cap_s` seconds
    (default `max_time_s`, ``--benchmark-max-time``); ``cold_l2`` rounds fill `max_time_s`. On CUDA
    `clock` is the point's DeviceClock (the benchmark's timer): the calls go back to back with no
    barrier inside a round, the clock waits at its readings, and the figure is device time. A CUDA
    point handed no clock is host-timed around a synchronised call, and says so. `replay`: a
    CUDA-graph capture of `call` already made (and checked) by the caller, for ``graph``.
    """
    info: dict = {"timing_mode": mode}
    cuda = torch.device(device).type == "cuda"
    if mode not in TIMING_MODES:
        raise ValueError(f"unknown timing mode {mode!r}; use one of {TIMING_MODES}")
    device_timed = cuda and clock is not None
    if cuda:
        info["timer"] = harness_device.timer_name(clock) if device_timed else harness_device.HOST_SYNCHRONIZED
    clock = clock or time.perf_counter
    cap = cap_s if cap_s is not None else max_time_s

    def timed(fn):  # what the rounds time: the bare call on the device's clock, else one ending idle
        return fn if device_timed or not cuda else measure.synchronized(fn, device)

    if mode == "warm":
        result = _planned_rounds(benchmark, timed(call), clock, device, info, cap, min_rounds)
        if cuda and not benchmark.disabled:
            # The host's view beside the device's: one synchronized call, wall and events.
            info.update(_busy_vs_wall(call, device, benchmark.stats.stats.median))
    elif mode == "cold_l2":
        flush = L2Flush(device, wait=not device_timed)
        flush()
        estimate = clock_median(timed(call), clock, reps=3, budget_s=0.5)
        n_rounds = rounds.fixed_time_rounds(estimate, max_time_s, min_rounds)
        # The flush is pedantic's `setup`: it runs before every round and is not timed.
        result = benchmark.pedantic(timed(call), setup=flush, rounds=n_rounds, warmup_rounds=1, iterations=1)
        info["l2_flush_bytes"] = flush.buffer.nbytes
        del flush
    else:  # graph
        if replay is None:
            replay, _ = capture_graph(call, device)
        result = _planned_rounds(benchmark, timed(replay), clock, device, info, cap, min_rounds)
        graph_s = (
            benchmark.stats.stats.median if not benchmark.disabled else clock_median(timed(replay), clock, 3)
        )
        # Eager on the same clock: the device time it adds over the replay is time the GPU waited
        # for the host to launch the next kernel.
        eager_s = clock_median(timed(call), clock, reps=10, budget_s=1.0)
        info.update(eager_seconds=eager_s, launch_overhead_fraction=max(0.0, 1.0 - graph_s / eager_s))
    if not benchmark.disabled:
        info["warnings"] = _round_warnings(benchmark, info, precise=mode != "cold_l2")
    return result, info


def _round_warnings(benchmark, info: dict, precise: bool = True) -> list[str]:
    """The self-checks of the rounds pytest-benchmark holds: the median's interval (where the
    rounds were planned for it) and `timer_warnings`."""
    data = list(benchmark.stats.stats.data)
    imprecise = rounds.precision_warning(data) if precise else None
    machine = load.measure(probe_s=0)
    return ([imprecise] if imprecise else []) + timer_warnings(
        data, info.get("device_seconds"), info.get("wall_seconds"), machine.loadavg_1m, machine.cores
    )


def replay_rounds(benchmark, clock: ReplayClock, seconds) -> None:
    """Rounds timed elsewhere handed to pytest-benchmark through the item's ReplayClock (its
    timer): one pedantic round per measured time, its statistics, JSON and comparisons then
    those of the measured rounds."""
    if not isinstance(clock, ReplayClock):
        raise TypeError(f"replayed rounds need the benchmark's ReplayClock as its timer, not {clock!r}")
    clock.load(seconds)
    benchmark.pedantic(clock.advance, setup=clock.rewind, rounds=len(seconds), iterations=1)


def rounds_by_hand(
    call: Callable[[], Any], device: str, *, cap_s: float, min_rounds: int
) -> tuple[list[float], dict]:
    """(per-call seconds of each round, the plan's info): `call` in rounds planned as the ``warm``
    mode plans them, on the device's clock, timed here rather than by pytest-benchmark, for a
    point whose benchmark replays its rounds (a side of a pair that could not be timed)."""
    dev = harness_device.of(device)
    clock = dev.clock()
    cuda = torch.device(device).type == "cuda"
    plan = rounds.pilot_plan(
        call, clock, rounds.MIN_ROUND_S["cuda" if cuda else "cpu"], cap_s, min_rounds, fit=cuda
    )
    seconds, _ = interleave.run_rounds({"call": call}, {"call": plan.iterations}, plan.rounds, clock)
    return seconds["call"], {**plan.info(), "timer": dev.timer_name}


def replayed_rounds(
    benchmark, clock: ReplayClock, call: Callable[[], Any], device: str, seconds, info: dict
) -> tuple[Any, dict]:
    """What `timed_rounds` returns for the ``warm`` mode, from rounds measured already (`seconds`
    per call, `info` saying where): the rounds replayed into `benchmark`, then one more call of
    `call`, whose output the caller checks (a variant that goes wrong once warm shows there), and
    on CUDA the host's view beside the device's."""
    replay_rounds(benchmark, clock, seconds)
    last = call()
    info = {"timing_mode": "warm", **info}
    if torch.device(device).type == "cuda":
        info.update(_busy_vs_wall(call, device, benchmark.stats.stats.median))
    else:
        info.pop("timer", None)  # as timed_rounds: a CPU point's clock is the host's, unnamed
    info["warnings"] = _round_warnings(benchmark, info)
    return last, info


def _planned_rounds(benchmark, call, clock, device: str, info: dict, cap_s: float, min_rounds: int):
    """`call` in rounds planned for precision (harness.contract.rounds.pilot_plan on `clock`), timed by
    pedantic; its plan goes into `info`; returns the last timed call's output."""
    if benchmark.disabled:
        return benchmark(call)
    cuda = torch.device(device).type == "cuda"
    # On the device's clock the rounds are sized from several calls and the gap is fitted;
    # host-timed (no clock handed), a call ends idle and its one call sizes it, as on the CPU.
    fit = cuda and harness_device.timer_name(clock) != harness_device.HOST_TIMER
    plan = rounds.pilot_plan(
        call, clock, rounds.MIN_ROUND_S["cuda" if cuda else "cpu"], cap_s, min_rounds, fit=fit
    )
    timed, last = keep_last_output(call, plan.rounds * plan.iterations)
    benchmark.pedantic(timed, rounds=plan.rounds, iterations=plan.iterations)
    info.update(plan.info())
    return last.pop()


def keep_last_output(call: Callable[[], Any], calls: int) -> tuple[Callable[[], None], list]:
    """`call` returning nothing, and a list that receives the output of its `calls`-th call.

    Pedantic keeps a one-iteration round's result alive until the next round returns, so each
    call's output could not reuse the last one's memory (a 16 MiB output measured 15-30% slower
    on CPU: fresh pages each call). Each output is freed inside its round, as in pytest-benchmark's
    calibrated loop and torch.utils.benchmark's Timer, except the last timed one, kept for the
    check after the rounds (a variant right on its first call may be wrong once warm)."""
    last: list = []
    count = 0

    def run():
        nonlocal count
        out = call()
        count += 1
        if count == calls:
            last.append(out)

    return run, last


def _busy_vs_wall(call, device, median_s: float) -> dict:
    # No warm-up: the benchmark has just run the same call.
    reps = rounds.probe_reps(median_s)
    device_s, wall_s = device_and_wall_seconds(call, device, reps, warmup=False)
    return {"device_seconds": device_s, "wall_seconds": wall_s}
