"""What a point's requirements make of its test, derived in this one place: the marker names runs
select by, the skip where a requirement is unmet on this machine, and the clock its benchmark is
timed with. Plain Python; the glue (`suite/recorder.py`) turns them into pytest marks.
"""

from __future__ import annotations

from typing import NamedTuple

from harness.machine import requirements
from harness.measure import timing

# The reason pytest-benchmark's --benchmark-only skips a test without its fixture: what a run will
# do (its plan, its estimate) reads it, and the glue lifts it from the rule checks.
NOT_A_BENCHMARK = "Skipping non-benchmark"


class Marks(NamedTuple):
    names: tuple[str, ...]  # among gpu, multigpu, distributed, slow, compiled
    skip: str  # why it cannot run here, or ""
    clock: object  # the benchmark's timer; None for pytest-benchmark's own (the host clock)


def of(point, role: str = "", timed: bool = False) -> Marks:
    """`point`: a plan point (its `requires`, `device`, and where it has them `slow` and `timing`);
    `role`: its variant's role; `timed`: its test takes pytest-benchmark's fixture."""
    skip = requirements.unmet(point.requires, point.device) or ""
    return Marks(names_of(point, role), skip, _clock(point) if timed and not skip else None)


def names_of(point, role: str = "") -> tuple[str, ...]:
    """The marker names alone: read off the declaration, no requirement probed (a probe such as
    torch.compile's takes seconds, and a run need not pay it for points it deselects)."""
    wanted = {
        "gpu": requirements.needs_gpu(point.requires, point.device),
        "multigpu": requirements.gpus_needed(point.requires) >= 2,
        "distributed": "distributed" in point.requires,
        "slow": getattr(point, "slow", False),
        "compiled": role == "compiled",
    }
    return tuple(n for n, w in wanted.items() if w)


def _clock(point):
    """CUDA points are timed in device time (harness.measure.timing.DeviceClock) in every mode: warm,
    cold-L2 and graph rounds alike, so no figure of a run is host time where the others are the
    device's. Points timed inside launched processes (timing ``replay``) hand those times over
    through a harness.measure.timing.ReplayClock, one per test."""
    mode = getattr(point, "timing", "")
    if mode == "replay":
        return timing.ReplayClock()
    if point.device == "cuda" and mode in timing.TIMING_MODES:
        return timing.DeviceClock(point.device)
    return None
