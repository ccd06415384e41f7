"""Distributed cases: one test per launched point, its points from the plan (`plan.launches`). The
launches (`cases._launch.dist_launches.Runs`, through `harness.run.launch`; cached for the session, so a
run is shared by the tests that read it) and their judging (`launched_*` beside each case:
`cases.parallel.*`, `cases.dist`) are plain Python; this module parametrises, hands pytest the
judgement's finding and benchmark row, and fails a test whose launch failed with every rank's output.

Timings: the ranks time their own steps (device synchronized before each clock read) and the
slowest rank's time per step is the step time. pytest-benchmark cannot time a subprocess's steps,
so each benchmark item carries a `harness.measure.timing.ReplayClock` as its timer (put there by the
recorder, from the point's timing ``replay``), and `replay` runs one pedantic round per measured
step against it: `benchmarks[].stats.data` holds the per-step times like any other row.

The launches that time nothing are started ahead, with those of the tests right after them
(`read_ahead`, over `harness.run.ahead`), and each test reads its own.
"""

from __future__ import annotations

import functools

import pytest

from cases._launch import launch_faults
from cases._launch.dist_launches import TIMEOUT_S, LaunchRecord, Runs
from cases.dist import setup as dist_setup
from cases.parallel import allreduce, average_gradient, dp_vs_ddp
from harness.host import load
from harness.measure import timing
from harness.run import launch
from harness.run.ahead import Ahead
from plan import launches
from suite import options, xdist_worker


def launched(test):
    """Decorator: a launch that failed fails the test with its message alone (every rank's output),
    not a traceback of the judging code."""

    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except launch.LaunchFailed as failed:
            message = str(failed)
        pytest.fail(message, pytrace=False)  # outside the handler: no chained traceback

    return run


def pytest_generate_tests(metafunc):
    if "launch_point" in metafunc.fixturenames:
        points = launches.points(metafunc.function.__name__, options.devices(metafunc.config))
        metafunc.parametrize("launch_point", points, ids=[p.id for p in points])


@pytest.fixture(scope="session")
def runs(tmp_path_factory, request):
    return Runs(tmp_path_factory.mktemp("dist"), request.config.getoption("--profile"))


def replay(request, benchmark, seconds: list[float]) -> None:
    """Give pytest-benchmark the step times the ranks measured (see the module docstring)."""
    marker = request.node.get_closest_marker("benchmark")
    clock = marker.kwargs.get("timer") if marker is not None else None
    if not isinstance(clock, timing.ReplayClock):
        pytest.fail(
            f"{request.node.nodeid} has no ReplayClock timer: is it parametrised with a LaunchPoint?",
            pytrace=False,
        )
    timing.replay_rounds(benchmark, clock, seconds)


def recorded(request, judged: LaunchRecord, benchmark=None) -> None:
    """The judgement's properties into the results JSON; its row to pytest-benchmark, the ranks'
    step times replayed."""
    props = request.node.user_properties
    props.extend(judged.properties(dict(props)["point"]))
    if judged.row is not None:
        benchmark.group = judged.group
        benchmark.extra_info.update(judged.extra_info)
        replay(request, benchmark, judged.step_seconds)


@launched
def test_ddp(launch_point, runs, benchmark, request):
    recorded(request, dp_vs_ddp.launched_ddp(runs, launch_point.device, launch_point.world), benchmark)


@launched
def test_dataparallel(launch_point, runs, benchmark, tmp_path, request):
    recorded(request, dp_vs_ddp.launched_dataparallel(runs, tmp_path), benchmark)


@launched
def test_two_nodes(launch_point, runs, request):
    recorded(request, dp_vs_ddp.launched_two_nodes(runs, launch_point.device))


@launched
def test_average_gradient(launch_point, runs, benchmark, request):
    judged = average_gradient.launched_average_gradient(runs, launch_point.device, launch_point.world)
    recorded(request, judged, benchmark)


@launched
def test_allreduce(launch_point, runs, benchmark, request):
    recorded(request, allreduce.launched_cost_model(runs, launch_point.device, launch_point.world), benchmark)


@launched
def test_allreduce_sizes(launch_point, runs, benchmark, request):
    recorded(request, allreduce.launched_sweep(runs, launch_point.name, launch_point.world), benchmark)


# The tests whose launches time nothing: each is started ahead with those of the tests right after
# it, a few at a time (harness/run/ahead.py says why), and read here. Started in this order: the
# hanging rank first, whose launch mostly waits for its timeout, beside the others' start-ups.
UNTIMED = {
    "test_fault_hanging_rank": lambda runs, p, out: launch_faults.hanging_rank(runs, out),
    "test_setup_spawn": lambda runs, p, out: dist_setup.launched_spawn(runs, p.device, p.world, out),
    "test_setup_torchrun": lambda runs, p, out: dist_setup.launched_torchrun_env(
        runs, p.device, p.world, out
    ),
    "test_notes_launch_local_rank": lambda runs, p, out: dist_setup.launched_notes_launch(runs, p.world, out),
    "test_fault_port_in_use": lambda runs, p, out: launch_faults.port_in_use(runs, out),
    "test_fault_raising_rank": lambda runs, p, out: launch_faults.raising_rank(runs, out),
}


@pytest.fixture(scope="session")
def ahead(request):
    """None in a pytest-xdist worker (the test command): its session lists every test, most of them
    other workers', and the workers already share the cores. Else a launch per three cores, at least
    two at once: each is three processes (torchrun and two ranks), and the hanging rank's ranks must
    reach their collective within its 15 s timeout beside the others' start-ups (they did, in every
    run on the 2-core EPYC)."""
    if xdist_worker.is_worker(request.config):
        return None
    return Ahead(max(2, load.usable_cores() // 3))


def read_ahead(request, ahead, runs, tmp_path_factory):
    """This test's untimed launch, judged: started now with those of the tests that run right after
    it (up to the first that is not one, or is skipped), unless one before it started it already;
    run here and now where there is no `ahead`."""
    node = request.node
    if ahead is None:
        return UNTIMED[node.originalname](
            runs, node.callspec.params["launch_point"], tmp_path_factory.mktemp("d")
        )
    if node.nodeid not in ahead:
        items = request.session.items
        jobs = []
        for item in items[items.index(node) :]:
            name = getattr(item, "originalname", "")
            skipped = item.get_closest_marker("skip") or item.get_closest_marker("skipif")
            if name not in UNTIMED or (item is not node and skipped):
                break
            point, out = item.callspec.params["launch_point"], tmp_path_factory.mktemp(name)
            jobs.append(
                (list(UNTIMED).index(name), item.nodeid, functools.partial(UNTIMED[name], runs, point, out))
            )
        ahead.start((nodeid, job) for _, nodeid, job in sorted(jobs, key=lambda j: j[0]))
    # Each job is one launch under its own timeout; all of them one after another bound the wait.
    return ahead.result(node.nodeid, timeout_s=len(UNTIMED) * (TIMEOUT_S + launch.GRACE_S + 30))


@launched
def test_setup_torchrun(launch_point, runs, ahead, tmp_path_factory, request):
    recorded(request, read_ahead(request, ahead, runs, tmp_path_factory))


@launched
def test_setup_spawn(launch_point, runs, ahead, tmp_path_factory, request):
    recorded(request, read_ahead(request, ahead, runs, tmp_path_factory))


@launched
def test_notes_launch_local_rank(launch_point, runs, ahead, tmp_path_factory, request):
    recorded(request, read_ahead(request, ahead, runs, tmp_path_factory))


@launched
def test_fault_port_in_use(launch_point, runs, ahead, tmp_path_factory, request):
    read_ahead(request, ahead, runs, tmp_path_factory)


@launched
def test_fault_raising_rank(launch_point, runs, ahead, tmp_path_factory, request):
    read_ahead(request, ahead, runs, tmp_path_factory)


@launched
def test_fault_hanging_rank(launch_point, runs, ahead, tmp_path_factory, request):
    read_ahead(request, ahead, runs, tmp_path_factory)
