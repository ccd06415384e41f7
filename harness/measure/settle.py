"""Start a block of timed calls once this process's other threads have stopped running.

torch's CPU kernels run on an OpenMP pool (libgomp in Linux builds) whose workers, their parallel
region done, spin on their cores before they sleep (``GOMP_SPINCOUNT``), so that the next region
starts without a wake-up. A computation whose threads are not that pool's, started inside that
window, shares the cores with the spinners: in `nn.kd_vs_brute`'s paired rounds at D = 2 the
KD-tree query (scipy, ``workers=-1``) took 3.6-3.9 ms a call in the rounds right after the brute
force's GEMM and 0.8-1.2 ms after its own (7 of 8 whole-suite runs, 2-core AMD EPYC), and the
paired ratios of such a run mix two regimes that the gate rightly refuses to judge. After that
GEMM the pool went idle in 3.3-4.0 ms (`idle_others`' wait, measured on the 2-core Xeon with
AMX). A variant whose work runs outside torch's pool carries `settled` as its block context
(`harness.measure.block_context`): each block of its timed calls then starts on a process whose
other threads are idle, outside the clock, as the variant's calls back to back run (its own rounds
timed alone), and as a program that calls only it does. Where there is no ``/proc`` nothing is waited for.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from harness.host import processes
from harness.measure import block_context

# Longer than the spin measured (~4 ms), short beside a block: a thread of this process that never
# stops running costs each block this much wall time, and nothing more.
CAP_S = 0.05
POLL_S = 0.0005


def others_running() -> list[int]:
    """Thread IDs of this process, other than the caller's, that are running now (state R)."""
    me = threading.get_native_id()
    return [tid for tid, t in processes.threads().items() if tid != me and t.state == "R"]


def idle_others(cap_s: float = CAP_S) -> float:
    """Wait until no other thread of this process is running, at most `cap_s`; the seconds waited."""
    started = time.perf_counter()
    while others_running() and time.perf_counter() - started < cap_s:
        time.sleep(POLL_S)
    return time.perf_counter() - started


@contextlib.contextmanager
def _idle_before(*inputs) -> Iterator[None]:
    idle_others()
    yield


def settled(fn):
    """`fn`, each block of its timed calls (and each direct call) started once the process's
    other threads are idle: for a computation whose work runs outside torch's thread pool."""
    return block_context.scoped(_idle_before)(fn)
