"""The process table as Linux's ``/proc`` shows it: each process's parent, state, start time and CPU
time (`read`, `table`), the processes below some roots (`below`), and a process's threads
(`threads`).

Two readers follow a process tree: the load reading counts a run's own workers (a DataLoader's,
a launch's ranks) as its own work, not as neighbours (`harness.host.load`), and a launch tracks
every rank it must not leave behind, by PID and start time against PID reuse
(`harness.run.launch`). psutil would do both, but it is one more compiled dependency for two
fields of one file. Plain Python; where there is no ``/proc`` the table is empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

TICK_S = 1 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


@dataclass(frozen=True)
class Process:
    parent: int
    state: str  # "R", "S", ... "Z": a zombie has exited, only its parent's wait is missing
    start_ticks: int  # since boot, in clock ticks: with the PID, names one process
    cpu_s: float  # user and system time of it and of the children it waited for


def parse_stat(text: str) -> Process:
    """A ``/proc/<pid>/stat`` text: fields 3, 4, 14-17 and 22, counted after the command name,
    which may hold spaces and parentheses (so from its last ``)``)."""
    fields = text[text.rindex(")") + 2 :].split()
    return Process(
        parent=int(fields[1]),
        state=fields[0],
        start_ticks=int(fields[19]),
        cpu_s=sum(int(v) for v in fields[11:15]) * TICK_S,
    )


def read(pid: int) -> Process | None:
    """One process, or None where it is gone (or there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return parse_stat(f.read())
    except OSError:
        return None


def table() -> dict[int, Process]:
    """Every process /proc lists now, zombies included. Not one snapshot: a process that exits
    between the listing and its own reading is left out, and a child reaped between its parent's
    reading and its own counts in neither (a few ticks, once)."""
    try:
        pids = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return {}
    procs = {}
    for pid in pids:
        if (p := read(pid)) is not None:
            procs[pid] = p
    return procs


def threads(pid: int | str = "self") -> dict[int, Process]:
    """Each thread of a process, by thread ID, as its ``/proc/<pid>/task`` lists them now (a thread
    that ends between the listing and its reading is left out); empty where there is no /proc."""
    try:
        tids = [int(e.name) for e in os.scandir(f"/proc/{pid}/task") if e.name.isdigit()]
    except OSError:
        return {}
    found = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                found[tid] = parse_stat(f.read())
        except OSError:
            continue
    return found


def below(roots: Iterable[int], procs: dict[int, Process]) -> set[int]:
    """PIDs of every process of `procs` whose ancestry (through `procs`) reaches one of `roots`;
    the roots themselves are not included."""
    found: set[int] = set()
    frontier = set(roots)
    while frontier:
        frontier = {pid for pid, p in procs.items() if p.parent in frontier and pid not in found}
        found |= frontier
    return found
