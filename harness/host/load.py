"""Is this machine quiet enough to hold a wall-clock assertion? Measured, not assumed.

Three readings, because each misses something the others see:

* the 1-minute load average counts runnable tasks, but lags a minute behind a job that just
  started, and counts our own threads;
* Linux's pressure-stall information (``/proc/pressure/cpu``, "some avg10") is the share of the
  last 10 s in which a runnable task waited for a CPU: it sees contention at once, where there is
  a kernel that exposes it. Its running total ("some total", µs) gives the same share over a
  stretch of work alone (`window`, then ``measure(since=...)``): `onehot.encode`'s pairs, timed
  right after `nn.kd_vs_brute`'s variants (scipy's query threads beside torch's), read "busy" on
  avg10 in each of three runs, their own rounds quiet. It cannot tell whose tasks waited: a pair
  whose own threads oversubscribe the cores (the KD-tree's, 29-42% of its rounds) reads busy too;
* a probe: one spinning process per usable core for a fraction of a second, each reading the CPU
  time it got. On an idle machine every spinner gets its whole core (share ≈ 1); beside two CPU
  burners on two cores each gets about two thirds. It sees any other consumer of any core, which
  is what a multi-threaded or multi-process timing suffers from.

`busy_reason` turns them into one sentence (None when quiet), for a test to skip with, or a run
to print beside its numbers. Plain Python, no torch.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass

# A probe spinner that got less than this share of its core shared it with someone (an idle
# machine gives 0.97-1.0: timer ticks and kernel threads take the rest).
MIN_SHARE = 0.9
# Tasks waited for a CPU more than this share of the last 10 s.
MAX_PRESSURE = 10.0  # percent, as /proc/pressure/cpu reports it
PROBE_S = 0.25


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _some_cpu(field: str) -> float | None:
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some "):
                    fields = dict(kv.split("=") for kv in line.split()[1:])
                    return float(fields[field])
    except (OSError, ValueError, KeyError):
        return None
    return None


def cpu_pressure() -> float | None:
    """/proc/pressure/cpu "some avg10" in percent, None where the kernel does not expose it."""
    return _some_cpu("avg10")


def cpu_stall_us() -> float | None:
    """/proc/pressure/cpu "some total": microseconds a runnable task waited for a CPU since boot."""
    return _some_cpu("total")


@dataclass(frozen=True)
class Window:
    """Where a stretch of work began, for the CPU pressure over it alone (``measure(since=...)``)."""

    wall: float
    stall_us: float | None


def window() -> Window:
    return Window(time.perf_counter(), cpu_stall_us())


def _spin(seconds: float, conn) -> None:
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start_wall < seconds:
        pass
    conn.send((time.process_time() - start_cpu) / (time.perf_counter() - start_wall))
    conn.close()


def probe_share(seconds: float = PROBE_S, cores: int | None = None) -> float:
    """The smallest share of its core that any of `cores` concurrent spinning processes got."""
    cores = cores or usable_cores()
    ctx = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    procs, pipes = [], []
    for _ in range(cores):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_spin, args=(seconds, child), daemon=True)
        proc.start()
        child.close()
        procs.append(proc)
        pipes.append(parent)
    shares = []
    for proc, pipe in zip(procs, pipes):
        if pipe.poll(seconds + 10):
            shares.append(pipe.recv())
        proc.join(timeout=5)
    return min(shares) if len(shares) == cores else 0.0


@dataclass(frozen=True)
class Load:
    cores: int
    loadavg_1m: float | None
    pressure_10s: float | None  # percent of the last 10 s a runnable task waited for a CPU
    probe_share: float | None  # the least share of its core a probe spinner got
    # Percent of a measured stretch of work (`window`) a runnable task waited for a CPU, and its
    # seconds; where there is one it is judged instead of the last 10 s.
    pressure_window: float | None = None
    window_s: float | None = None

    def busy_reason(self) -> str | None:
        """Why wall-clock figures measured now would measure the neighbours; None when quiet."""
        reasons = []
        if self.probe_share is not None and self.probe_share < MIN_SHARE:
            reasons.append(
                f"a spinner per core got only {self.probe_share:.0%} of its core (quiet: ≥ {MIN_SHARE:.0%})"
            )
        if self.pressure_window is not None:
            if self.pressure_window > MAX_PRESSURE:
                reasons.append(
                    f"tasks waited for a CPU {self.pressure_window:.0f}% of the {self.window_s:.3g} s "
                    f"measured (quiet: ≤ {MAX_PRESSURE:.0f}%)"
                )
        elif self.pressure_10s is not None and self.pressure_10s > MAX_PRESSURE:
            reasons.append(
                f"tasks waited for a CPU {self.pressure_10s:.0f}% of the last 10 s "
                f"(quiet: ≤ {MAX_PRESSURE:.0f}%)"
            )
        if not reasons:
            return None
        avg = f", load average {self.loadavg_1m:.1f}" if self.loadavg_1m is not None else ""
        return f"machine busy ({'; '.join(reasons)}{avg} on {self.cores} cores)"

    def to_data(self) -> dict:
        return {
            "cores": self.cores,
            "loadavg_1m": self.loadavg_1m,
            "cpu_pressure_10s": self.pressure_10s,
            "probe_share": self.probe_share,
            "cpu_pressure_window": self.pressure_window,
            "window_s": self.window_s,
            "busy": self.busy_reason(),
        }


def measure(probe_s: float = PROBE_S, since: Window | None = None) -> Load:
    """The machine's load now; with `since`, the CPU pressure over the work since that `window`
    too (judged instead of the last 10 s)."""
    try:
        avg = os.getloadavg()[0]
    except (AttributeError, OSError):
        avg = None
    cores = usable_cores()
    share = probe_share(probe_s, cores) if probe_s > 0 else None
    pressure_window = window_s = None
    if since is not None and since.stall_us is not None:
        stall, elapsed = cpu_stall_us(), time.perf_counter() - since.wall
        if stall is not None and elapsed > 0:
            pressure_window, window_s = 100 * (stall - since.stall_us) / 1e6 / elapsed, elapsed
    return Load(cores, avg, cpu_pressure(), share, pressure_window, window_s)
