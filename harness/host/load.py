"""Is this machine quiet enough to hold a wall-clock assertion? Measured, not assumed.

Four readings, because each misses something the others see:

* the 1-minute load average counts runnable tasks, but lags a minute behind a job that just
  started, and counts our own threads;
* Linux's pressure-stall information (``/proc/pressure/cpu``, "some avg10") is the share of the
  last 10 s in which a runnable task waited for a CPU: it sees contention at once, where there is
  a kernel that exposes it. It cannot tell whose tasks waited: a stretch of work whose own threads
  oversubscribe the cores reads busy too (`nn.kd_vs_brute`'s pairs, scipy's query threads beside
  torch's: 29-42% of their own rounds, every run);
* over a stretch of work alone (`window`, then ``measure(since=...)``), the other processes' share
  of the cores this process may run on: the kernel's busy time of those cores (``/proc/stat``,
  steal included: a hypervisor's other guests) less this process tree's CPU time over the same
  stretch. It sees the neighbours and not the work's own threads or workers (up to the ticks'
  resolution, and the work's own interrupt time where the kernel charges it apart), and is judged
  instead of the pressure where it can be read: busy where the neighbours took a tenth of the cores,
  or a quarter of a core of cores the work was filling (one neighbour's core is 6% of 16). Not
  read, and the pressure judged, where the stretch is short for the ticks, the readings disagree
  (the work ran on cores its main thread may not), or a CPU quota below the cores hides the
  neighbours that share it. (Measured before it: `onehot.encode`'s pairs, timed right after
  `nn.kd_vs_brute`'s variants, read "busy" on avg10 in each of three runs, their own rounds quiet;
  the KD-tree's pairs read busy from their own threads on the window's pressure.)
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

from harness.host import processes

# A probe spinner that got less than this share of its core shared it with someone (an idle
# machine gives 0.97-1.0: timer ticks and kernel threads take the rest).
MIN_SHARE = 0.9
# Tasks waited for a CPU more than this share of the last 10 s.
MAX_PRESSURE = 10.0  # percent, as /proc/pressure/cpu reports it
# Other processes (and a hypervisor's steal) took more than this share of this process's cores over
# a measured stretch. Quiet here (2-core EPYC VM): 0-3%, kernel threads and interrupts.
MAX_OTHERS = 10.0  # percent
# ... or at least this many cores' worth while the stretch's own work and theirs filled the cores
# (within half a core): on 16 cores one neighbour's core is 6%, yet every OpenMP barrier of a
# 16-thread op waits for the thread it displaced.
MIN_CONTENDING_CORES = 0.25
# /proc/stat counts in ticks (10 ms) while the work's own time is exact: a stretch shorter than
# this many core-seconds would read its neighbours to worse than ±5%, so its reading waits until
# the stretch is this long (a pair of fast calls: 15-70 ms of rounds, 30 of 85 pairs under 0.25 s on
# 2 cores, 4 s a run in all). The CPU pressure over so short a stretch is no better: 10% over 69 ms,
# one stall of 7 ms, read a quiet layernorm.manual pair busy.
MIN_WINDOW_CORE_S = 0.5
_TICK_S = processes.TICK_S
PROBE_S = 0.25


def usable_cores() -> int:
    return len(_affinity())


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


def cores_busy_s(cores: frozenset[int]) -> float | None:
    """Seconds the kernel counts `cores` busy since boot (``/proc/stat``); None where there is no
    /proc/stat or it lacks one of them (a container's renumbered view)."""
    try:
        with open("/proc/stat") as f:
            return busy_s_in(f.read(), cores)
    except OSError:
        return None


def busy_s_in(stat: str, cores: frozenset[int]) -> float | None:
    """`cores`' busy seconds in a /proc/stat text: user, nice, system, irq, softirq and steal of
    each (guest time is inside user; idle and iowait are not busy); None if one is missing."""
    ticks, seen = 0, set()
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
            fields = [int(v) for v in rest.split()]
            ticks += sum(fields[i] for i in (0, 1, 2, 5, 6, 7) if i < len(fields))
            seen.add(int(name[3:]))
    return ticks * _TICK_S if seen == set(cores) else None


def listed_cores() -> frozenset[int]:
    """Every core /proc/stat lists (empty where there is none)."""
    try:
        with open("/proc/stat") as f:
            names = [line.split(" ", 1)[0] for line in f if line.startswith("cpu")]
    except OSError:
        return frozenset()
    return frozenset(int(name[3:]) for name in names if name[3:].isdigit())


def _affinity() -> frozenset[int]:
    """The cores this process may run on (its main thread's mask)."""
    if hasattr(os, "sched_getaffinity"):
        return frozenset(os.sched_getaffinity(0))
    return frozenset(range(os.cpu_count() or 1))


def cpu_quota_cores() -> float | None:
    """The cgroup v2 CPU quota of this process's group in cores (``cpu.max``), None where it has
    none or none can be read. A quota below the cores it may run on hides the neighbours that share
    it: their use shows as this group's throttling, not on the cores' busy time."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.split("::", 1)[1].strip() for line in f if line.startswith("0::")), None)
        if path is None:
            return None
        with open(f"/sys/fs/cgroup{path.rstrip('/')}/cpu.max") as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def own_cpu_s() -> float:
    """CPU seconds of this process (every thread), of its children it has waited for, and of its
    live descendants (a DataLoader's workers, a launch's ranks): the work's own share, which the
    neighbours' share leaves out."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system + _descendants_cpu_s()


def _descendants_cpu_s() -> float:
    """User and system seconds of every live process below this one, theirs and their waited-for
    children's; 0 where there is no /proc."""
    procs = processes.table()
    return sum(procs[pid].cpu_s for pid in processes.below({os.getpid()}, procs))


@dataclass(frozen=True)
class Window:
    """Where a stretch of work began, for the load over it alone (``measure(since=...)``): the
    CPU pressure's running total, the cores' busy time and this process tree's CPU time then."""

    wall: float
    stall_us: float | None
    cores_busy_s: float | None = None
    own_cpu_s: float | None = None
    cores: frozenset[int] = frozenset()  # the cores both readings are of


def window() -> Window:
    cores = _affinity()
    return Window(time.perf_counter(), cpu_stall_us(), cores_busy_s(cores), own_cpu_s(), cores)


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
    # Percent of the stretch's cores that other processes (and steal) took, and that its own
    # process tree took; where there is one it is judged instead of both pressures.
    others_window: float | None = None
    own_window: float | None = None

    def _shared(self) -> str | None:
        """Why the neighbours took too much of the stretch's cores; None when they did not."""
        if self.others_window > MAX_OTHERS:
            return (
                f"other processes took {self.others_window:.0f}% of this process's cores over the "
                f"{self.window_s:.3g} s measured (quiet: ≤ {MAX_OTHERS:.0f}%)"
            )
        others_cores = self.others_window / 100 * self.cores
        own_cores = (self.own_window or 0.0) / 100 * self.cores
        if others_cores >= MIN_CONTENDING_CORES and own_cores + others_cores > self.cores - 0.5:
            return (
                f"other processes took {others_cores:.2g} of the {self.cores} cores the work was "
                f"using {own_cores:.2g} of over the {self.window_s:.3g} s measured: it had to share them"
            )
        return None

    def busy_reason(self) -> str | None:
        """Why wall-clock figures measured now would measure the neighbours; None when quiet."""
        reasons = []
        if self.probe_share is not None and self.probe_share < MIN_SHARE:
            reasons.append(
                f"a spinner per core got only {self.probe_share:.0%} of its core (quiet: ≥ {MIN_SHARE:.0%})"
            )
        if self.others_window is not None:
            if shared := self._shared():
                reasons.append(shared)
        elif self.pressure_window is not None:
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
            "others_cpu_window": self.others_window,
            "own_cpu_window": self.own_window,
            "busy": self.busy_reason(),
        }


def measure(probe_s: float = PROBE_S, since: Window | None = None) -> Load:
    """The machine's load now; with `since`, over the work since that `window` too: the other
    processes' share of the cores (judged where /proc/stat gives it) and the CPU pressure. A window
    shorter than MIN_WINDOW_CORE_S of its cores is read once it has lasted that long."""
    try:
        avg = os.getloadavg()[0]
    except (AttributeError, OSError):
        avg = None
    cores = usable_cores()
    share = probe_share(probe_s, cores) if probe_s > 0 else None
    pressure_window = window_s = others = own = None
    if since is not None:
        if (
            since.cores
            and (short := MIN_WINDOW_CORE_S / len(since.cores) - (time.perf_counter() - since.wall)) > 0
        ):
            time.sleep(short)
        elapsed = time.perf_counter() - since.wall
        stall = cpu_stall_us() if since.stall_us is not None else None
        if elapsed > 0:
            window_s = elapsed
            if stall is not None:
                pressure_window = 100 * (stall - since.stall_us) / 1e6 / elapsed
            others, own = _shares(since, elapsed)
            if others is not None:
                cores = len(since.cores)
    return Load(cores, avg, cpu_pressure(), share, pressure_window, window_s, others, own)


class Stretch:
    """The load over one block of work alone: ``with load.stretch() as over: <work>``, then
    ``over.load`` (a `Load`, measured as the block ends without a probe; None where the block
    raised): the neighbours while the work ran, not before it."""

    def __init__(self) -> None:
        self.load: Load | None = None

    def __enter__(self) -> Stretch:
        self._began = window()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.load = measure(probe_s=0, since=self._began)
        return False


def stretch() -> Stretch:
    return Stretch()


def _shares(since: Window, elapsed: float) -> tuple[float | None, float | None]:
    """(others', own) percent of the window's cores over it; (None, None) where that cannot be told:
    no /proc/stat reading at either end, a stretch too short for the ticks (`measure` waits out a
    short one), a CPU quota below the cores (the neighbours sharing it do not show on the cores), or
    readings that disagree by more than the ticks can (the own time above the cores' busy time)."""
    n = len(since.cores)
    busy = cores_busy_s(since.cores) if n else None
    if busy is None or since.cores_busy_s is None or since.own_cpu_s is None:
        return None, None
    quota = cpu_quota_cores()
    if elapsed * n < MIN_WINDOW_CORE_S or (quota is not None and quota < n):
        return None, None
    mine = own_cpu_s() - since.own_cpu_s
    theirs = (busy - since.cores_busy_s) - mine
    # Ticks against the scheduler's exact own time: a quiet stretch reads below zero, on this VM by
    # more than the ticks (a KD-tree pair, its own threads on both cores: its own time above the
    # cores' busy time by more than the 0.14 s allowed over 1.04 s; a vCPU's stolen time can count
    # in one and not the other). Where the work may run on every core, that is all it can be; on
    # part of them, far below zero means the two readings are not of the same cores (the work's
    # threads ran elsewhere): not read.
    if theirs < -(2 * _TICK_S * n + 0.05 * elapsed * n) and since.cores != listed_cores():
        return None, None
    return 100 * max(0.0, theirs) / (elapsed * n), 100 * mine / (elapsed * n)
