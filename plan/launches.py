"""Which launches each distributed test makes (suite/test_distributed.py): its `LaunchPoint`s on a
run's devices, keyed by the test's name.

Each point carries its test's name, which names its recorded check, as for any topic test; its
markers and skip come from its requirements in the recorder, like every other suite test's. World
sizes: `harness.run.launch.world_sizes` (``SUITE_WORLD_SIZES``, else the hardware's). Plain Python: no
pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from cases._lib.collectives import ALLREDUCE
from harness.run import launch
from plan import LaunchPoint


def at_world_sizes(case: str, name: str, devices: Sequence[str], smallest: int = 1) -> list[LaunchPoint]:
    """`name` of `case` at every world size of each of `devices` from `smallest` ranks up."""
    # More CPU ranks than the CI machine's 2 cores time contention, not the algorithm: slow.
    return [
        LaunchPoint.on(case, name, d, w, slow=d == "cpu" and w > 2)
        for d in devices
        for w in launch.world_sizes(d)
        if w >= smallest
    ]


def _once(case: str, name: str, device: str = "cpu", world: int | None = None, **on):
    """One point whatever the run's devices: a launch on one device at a fixed world size."""
    return lambda devices: [LaunchPoint.on(case, name, device, world, **on)]


# test function → its points on the run's devices (`--device`)
LAUNCHES: dict[str, Callable[[Sequence[str]], list[LaunchPoint]]] = {
    # parallel.dp_vs_ddp, parallel.average_gradient, parallel.allreduce
    "test_ddp": lambda devices: at_world_sizes("parallel.dp_vs_ddp", "ddp", devices),
    # one process driving every GPU it sees (no world size): on CUDA only, skipped below 2 GPUs
    "test_dataparallel": _once("parallel.dp_vs_ddp", "dp", "cuda", gpus=2),
    "test_two_nodes": _once("parallel.dp_vs_ddp", "two_nodes"),
    "test_average_gradient": lambda devices: at_world_sizes(
        "parallel.average_gradient", "", devices, smallest=2
    ),
    "test_allreduce": lambda devices: at_world_sizes("parallel.allreduce", "", devices, smallest=2),
    "test_allreduce_sizes": lambda devices: [
        LaunchPoint.on("parallel.allreduce", a, "cpu", 2) for a in ALLREDUCE
    ],
    # dist.setup
    "test_setup_torchrun": _once("dist.setup", "torchrun_env", world=2),
    "test_setup_spawn": _once("dist.setup", "mp_spawn_tcp", world=2),
    "test_notes_launch_local_rank": _once("dist.setup", "notes_local_rank", world=2),
    "test_fault_port_in_use": _once("dist.setup", "fault_port_in_use"),
    "test_fault_raising_rank": _once("dist.setup", "fault_raising_rank"),
    "test_fault_hanging_rank": _once("dist.setup", "fault_hanging_rank"),
}


def points(test: str, devices: Sequence[str]) -> list[LaunchPoint]:
    """The points `test` runs on `devices`, each carrying the test's name."""
    return [dataclasses.replace(p, test=test) for p in LAUNCHES[test](devices)]
