"""Distributed cases: one test per launched point. The launches (`cases._lib.dist_launches.Runs`,
through `harness.launch`) and their judging (`launched_*` beside each case: `cases.parallel.*`,
`cases.dist`) are plain Python; this module parametrises, hands pytest the judgement's finding
and benchmark row, and fails a test whose launch failed with every rank's output.

Timings: the ranks time their own steps (device synchronized before each clock read) and the
slowest rank's time per step is the step time. pytest-benchmark cannot time a subprocess's steps,
so each benchmark item carries a `harness.timing.ReplayClock` as its timer (put there by the
recorder, from the point's timing ``replay``), and `replay` runs one pedantic round per measured
step against it: `benchmarks[].stats.data` holds the per-step times like any other row.

Each test takes a `LaunchPoint` (plan/__init__.py), so its markers and skip come from its
requirements in the recorder, like every other suite test's. World sizes: `harness.launch.world_sizes`
(``SUITE_WORLD_SIZES``, else the hardware's). Launches are cached for the session, so a run is
shared by the tests that read it.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from cases import dist
from cases._lib import launch_faults
from cases._lib.collectives import ALLREDUCE
from cases._lib.dist_launches import LaunchRecord, Runs
from cases.parallel import allreduce, average_gradient, dp_vs_ddp
from harness import launch, record, timing
from plan import LaunchPoint
from suite import options

# ---- parametrisation --------------------------------------------------------------------------------


def _at_world_sizes(case: str, name: str, devices, smallest: int = 1) -> list[LaunchPoint]:
    # More CPU ranks than the CI machine's 2 cores time contention, not the algorithm: slow.
    return [
        LaunchPoint.on(case, name, d, w, slow=d == "cpu" and w > 2)
        for d in devices
        for w in launch.world_sizes(d)
        if w >= smallest
    ]


def launches(points):
    """Decorator: the test runs once per `LaunchPoint` of ``points(devices)``; a launch that failed
    fails it with its message alone (every rank's output), not a traceback of the judging code."""

    def mark(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            try:
                return test(*args, **kwargs)
            except launch.LaunchFailed as failed:
                message = str(failed)
            pytest.fail(message, pytrace=False)  # outside the handler: no chained traceback

        run.launch_points = points
        return run

    return mark


def pytest_generate_tests(metafunc):
    make = getattr(metafunc.function, "launch_points", None)
    if make is not None:
        test = metafunc.function.__name__
        points = [dataclasses.replace(p, test=test) for p in make(options.devices(metafunc.config))]
        metafunc.parametrize("launch_point", points, ids=[p.id for p in points])


@pytest.fixture(scope="session")
def runs(tmp_path_factory, request):
    return Runs(tmp_path_factory.mktemp("dist"), request.config.getoption("--profile"))


# ---- recording a judgement --------------------------------------------------------------------------


def replay(request, benchmark, seconds: list[float]) -> None:
    """Give pytest-benchmark the step times the ranks measured (see the module docstring)."""
    marker = request.node.get_closest_marker("benchmark")
    clock = marker.kwargs.get("timer") if marker is not None else None
    if not isinstance(clock, timing.ReplayClock):
        pytest.fail(
            f"{request.node.nodeid} has no ReplayClock timer: is it parametrised with a LaunchPoint?",
            pytrace=False,
        )
    clock.load(seconds)
    benchmark.pedantic(clock.advance, setup=clock.rewind, rounds=len(seconds), iterations=1)


def recorded(request, judged: LaunchRecord, benchmark=None) -> None:
    """A finding names its own check (``ddp_scaling-w2``), which names the test's outcome; a row
    goes to pytest-benchmark with the ranks' step times replayed."""
    props = request.node.user_properties
    if judged.finding is not None:
        props.append(("point", {**dict(props)["point"], "check": judged.check}))
        props.append(("finding", judged.finding.to_data()))
    if judged.measured is not None:
        props.append(("measured", judged.measured))
    if judged.row is not None:
        info, extra, times = judged.row
        benchmark.group = judged.group
        benchmark.extra_info.update(record.BenchmarkInfo(**info).to_data(), **extra)
        replay(request, benchmark, times)


# ---- parallel.dp_vs_ddp, parallel.average_gradient, parallel.allreduce --------------------------------


@launches(lambda devices: _at_world_sizes("parallel.dp_vs_ddp", "ddp", devices))
def test_ddp(launch_point, runs, benchmark, request):
    recorded(request, dp_vs_ddp.launched_ddp(runs, launch_point.device, launch_point.world), benchmark)


@launches(lambda devices: [LaunchPoint.on("parallel.dp_vs_ddp", "dp", "cuda", gpus=2)])
def test_dataparallel(launch_point, runs, benchmark, tmp_path, request):
    recorded(request, dp_vs_ddp.launched_dataparallel(runs, tmp_path), benchmark)


@launches(lambda devices: [LaunchPoint.on("parallel.dp_vs_ddp", "two_nodes", "cpu")])
def test_two_nodes(launch_point, runs, request):
    recorded(request, dp_vs_ddp.launched_two_nodes(runs, launch_point.device))


@launches(lambda devices: _at_world_sizes("parallel.average_gradient", "", devices, smallest=2))
def test_average_gradient(launch_point, runs, benchmark, request):
    judged = average_gradient.launched_average_gradient(runs, launch_point.device, launch_point.world)
    recorded(request, judged, benchmark)


@launches(lambda devices: _at_world_sizes("parallel.allreduce", "", devices, smallest=2))
def test_allreduce(launch_point, runs, benchmark, request):
    recorded(request, allreduce.launched_cost_model(runs, launch_point.device, launch_point.world), benchmark)


@launches(lambda devices: [LaunchPoint.on("parallel.allreduce", a, "cpu", 2) for a in ALLREDUCE])
def test_allreduce_sizes(launch_point, runs, benchmark, request):
    recorded(request, allreduce.launched_sweep(runs, launch_point.name, launch_point.world), benchmark)


# ---- dist.setup ------------------------------------------------------------------------------------------


@launches(lambda devices: [LaunchPoint.on("dist.setup", "torchrun_env", "cpu", 2)])
def test_setup_torchrun(launch_point, runs, tmp_path, request):
    recorded(request, dist.launched_torchrun_env(runs, launch_point.device, launch_point.world, tmp_path))


@launches(lambda devices: [LaunchPoint.on("dist.setup", "mp_spawn_tcp", "cpu", 2)])
def test_setup_spawn(launch_point, runs, tmp_path, request):
    recorded(request, dist.launched_spawn(runs, launch_point.device, launch_point.world, tmp_path))


@launches(lambda devices: [LaunchPoint.on("dist.setup", "notes_local_rank", "cpu", 2)])
def test_notes_launch_local_rank(launch_point, runs, tmp_path, request):
    recorded(request, dist.launched_notes_launch(runs, launch_point.world, tmp_path))


@launches(lambda devices: [LaunchPoint.on("dist.setup", "fault_port_in_use", "cpu")])
def test_fault_port_in_use(launch_point, runs, tmp_path):
    launch_faults.port_in_use(runs, tmp_path)


@launches(lambda devices: [LaunchPoint.on("dist.setup", "fault_raising_rank", "cpu")])
def test_fault_raising_rank(launch_point, runs, tmp_path):
    launch_faults.raising_rank(runs, tmp_path)


@launches(lambda devices: [LaunchPoint.on("dist.setup", "fault_hanging_rank", "cpu")])
def test_fault_hanging_rank(launch_point, runs, tmp_path):
    launch_faults.hanging_rank(runs, tmp_path)
