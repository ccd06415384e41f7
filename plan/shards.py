"""A run cut into N shards: which shard each planned test runs in, and the manifest's hash.

A shard is a slice of the plan (the tests a run collects, after ``-k`` and ``-m``), never a slice
of a count of tests: the tests are grouped into units that must run together, each unit is priced
by the plan's cost model (`plan.estimate.estimate`: a timed pair's interleaved rounds, a side's
replayed calls, a check, a process launch), and the units are dealt out heaviest first, each to
the shard with the least work so far (ties to the lowest shard; ties between units by their key).
The same collection gives the same slices on every machine and in every process: pricing uses the
repository's reference runs (`plan.estimate.DEFAULT_REFERENCE`) and prices every test as runnable,
whatever this machine has.

A unit is one case's part at one size, dtype and device (its variants' checks and timings and the
pairs timed between them: a pair's sides take their rows from the pair's rounds,
suite/pair_rounds.py, and share its inputs and oracle), or one test of anything else (a rule check,
a launch of worker processes, a topic test).

The manifest's hash is the hash of the planned node IDs, sorted: it names the plan, whatever N.
Plain Python: no pytest (`suite/shard_plugin.py` is the glue, `suite.manifest` the command).
"""

from __future__ import annotations

import argparse
import heapq
import os
import re
from collections import defaultdict
from dataclasses import dataclass

USAGE = "--shard takes K/N, two whole numbers with 1 ≤ K ≤ N (e.g. --shard 2/4)"
ATTEMPT_VARIABLES = ("SUITE_ATTEMPT", "GITHUB_RUN_ATTEMPT")


def parse(text) -> tuple[int, int]:
    """(K, N) from ``K/N``; ValueError naming the valid form otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not match:
        raise ValueError(f"{USAGE}; got {str(text)!r:.40}")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"{USAGE}; got {k}/{n}")
    return k, n


def attempt() -> int:
    """The run attempt of this shard: SUITE_ATTEMPT, else GitHub's GITHUB_RUN_ATTEMPT, else Slurm's
    restart count + 1, else 1."""
    for name in ATTEMPT_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) >= 1:
            return int(value)
    restarts = os.environ.get("SLURM_RESTART_COUNT", "").strip()
    return int(restarts) + 1 if restarts.isdigit() else 1


def manifest_hash(nodeids) -> str:
    """The plan's identity (harness.contract.record.manifest_hash: the reports read it torch-free)."""
    from harness.contract import record

    return record.manifest_hash(nodeids)


def unit_of(nodeid: str, point) -> tuple:
    """The unit a test runs in (see the module's text)."""
    from plan.points import PairPoint, VariantPoint

    if isinstance(point, (VariantPoint, PairPoint)):
        return ("group", point.case.id, point.part, point.size_label, str(point.dtype), point.device)
    return ("test", nodeid)


def _pricing_args(cap_s: float) -> argparse.Namespace:
    """plan.estimate's defaults, every test priced as runnable (no machine's GPUs decide)."""
    return argparse.Namespace(
        cap_s=cap_s,
        fixed_s=None,
        group_s=0.05,
        oracle_factor=4.0,
        check_s=None,
        launch_s=None,
        compile_s=None,
        autotune_s=120.0,
        memory_gib=1e9,
        gpus=1 << 10,
        default_call_s=1e-3,
        default_spread=0.02,
    )


_REFERENCE: tuple | None = None


def _reference():
    global _REFERENCE
    if _REFERENCE is None:
        from plan import estimate

        _REFERENCE = estimate.read_references(list(estimate.DEFAULT_REFERENCE.values()))
    return _REFERENCE


@dataclass(frozen=True)
class Assignment:
    n: int
    shard_of: dict[str, int]  # node ID → shard (1..N)
    seconds: tuple[float, ...]  # the priced work per shard
    manifest: str  # the plan's hash

    def points(self, k: int) -> list[str]:
        return [nodeid for nodeid, shard in self.shard_of.items() if shard == k]


def assign(planned, n: int, *, cap_s: float = 1.0) -> Assignment:
    """Deal `planned` (plan.estimate.Planned: the collected tests, in order) into `n` shards."""
    from plan import estimate

    if n < 1:
        raise ValueError(f"{USAGE}; got N={n}")
    units: dict[tuple, list] = defaultdict(list)
    for p in planned:
        units[unit_of(p.nodeid, p.point)].append(p)
    reference, compiles = _reference()
    args = _pricing_args(cap_s)
    priced = []
    for key, members in units.items():
        runnable = [estimate.Planned(m.nodeid, frozenset(), False, m.case, m.test, m.point) for m in members]
        totals = estimate.estimate(runnable, reference, args, compiles)
        priced.append((sum(t.total for t in totals.values()), tuple(map(str, key)), members))
    priced.sort(key=lambda u: (-round(u[0], 9), u[1]))
    heap = [(0.0, k) for k in range(1, n + 1)]
    seconds = [0.0] * (n + 1)
    shard_of: dict[str, int] = {}
    for cost, _, members in priced:
        load, k = heapq.heappop(heap)
        for m in members:
            shard_of[m.nodeid] = k
        seconds[k] = load + cost
        heapq.heappush(heap, (seconds[k], k))
    ordered = {p.nodeid: shard_of[p.nodeid] for p in planned}
    return Assignment(n, ordered, tuple(seconds[1:]), manifest_hash(ordered))
