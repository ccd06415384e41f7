"""harness.host.allocator in worker processes: the host allocator's thresholds are pinned and passed to
worker processes, and a large temporary then costs the same in a fresh process as after other work."""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys

import pytest

from tests import quiet
from tests.launcher import ROOT

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's")

# A fresh interpreter times distance.pairwise's broadcast at n = 128 (two 16 MiB temporaries a
# call), optionally after the sizes around it ran (what a run's earlier points leave behind).
PROBE = """
import json, statistics, sys, time
import torch
from harness.host import allocator
from cases import distance
pinned = allocator.pin() if sys.argv[1] == "pin" else {}
if sys.argv[2] == "history":
    for n in (64, 256, 512):
        distance.broadcast(*distance.make_points({"n": n, "m": n, "d": 256}, torch.float32, "cpu", 0))
x, y = distance.make_points({"n": 128, "m": 128, "d": 256}, torch.float32, "cpu", 0)
for _ in range(3):
    distance.broadcast(x, y)
times = []
for _ in range(100):
    t0 = time.perf_counter(); distance.broadcast(x, y); times.append(time.perf_counter() - t0)
print(json.dumps({"median": statistics.median(times), "pinned": pinned}))
"""


def _probe(pin: str, history: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, pin, history], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


CHILD = """
import json, subprocess, sys
from harness.host import allocator
state = allocator.pin()
show = "import os; print(os.environ.get('GLIBC_TUNABLES'))"
child = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True).stdout.strip()
print(json.dumps([state, child]))
"""


@pytest.mark.integration
def test_pin_fixes_both_thresholds_and_hands_them_to_children():
    run = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=120)
    state, child = json.loads(run.stdout)
    assert state["pinned"] is True and state["mmap_threshold"] == 32 * 2**20
    assert "glibc.malloc.mmap_threshold=33554432" in child and "glibc.malloc.trim_threshold=" in child


@pytest.mark.integration
@pytest.mark.timing
def test_a_large_temporary_costs_the_same_fresh_or_after_other_work_once_pinned():
    """Unpinned, a process pays page faults on every call or not depending on its history
    (measured 14.5 ms against 1.6 ms, AMD EPYC 2 cores); pinned, 1.4-1.7 ms in both states: held
    within 30% (timing noise on a quiet machine is a few percent; the unpinned gap is 9×). Three
    processes of each kind, alternated, and the median of each kind: one probe of each, one after
    the other, once read 4.8 against 3.1 ms in a fresh-clone CI run here and passed in the run before (a
    neighbour's burst on this VM lands on one process; alternated, it lands on both kinds)."""
    medians: dict[str, list[float]] = {"fresh": [], "history": []}
    for _ in range(3):
        for history, found in medians.items():
            found.append(_probe("pin", history)["median"])
    fresh, after = statistics.median(medians["fresh"]), statistics.median(medians["history"])
    quiet.hold(
        max(fresh, after) / min(fresh, after) < 1.3,
        f"pinned: fresh process {fresh * 1e3:.2f} ms vs after other work {after * 1e3:.2f} ms a call",
    )
