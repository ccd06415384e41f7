"""Distributed cases: launch `cases.dist_worker` with torchrun, hand its per-rank JSON to the
cases' judges (`cases.parallel.*`, `cases.dist`; the training runs read by
`cases._lib.launched_training`), record their findings and benchmark rows.

Timings: the ranks time their own steps (device synchronized before each clock read) and the
slowest rank's time per step is the step time. pytest-benchmark cannot time a subprocess's steps,
so each benchmark item carries a `harness.timing.ReplayClock` as its timer (put there by the
recorder, from the point's timing ``replay``), and `replay` runs one pedantic round per measured
step against it: `benchmarks[].stats.data` holds the per-step times like any other row.

Each test takes a `LaunchPoint` (plan/__init__.py), so its markers and skip come from its
requirements in the recorder, like every other suite test's. World sizes: ``SUITE_WORLD_SIZES``
(e.g. "1,2,4"), else 1 and 2, plus 4 marked slow on CPU, and 1..N on N GPUs. Launches are cached
for the session, so a run is shared by the tests that read it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
import torch

from cases import dist as S
from cases._lib.collectives import ALLREDUCE
from cases._lib.launched_training import TRAIN_SIZES, check_training, train_row
from cases.parallel import allreduce, average_gradient, dp_vs_ddp
from harness import launch, record, timing
from plan import LaunchPoint
from suite import options

WORKER = "cases.dist_worker"
TIMEOUT_S = 180.0


# ---- parametrisation --------------------------------------------------------------------------------


def _world_sizes(device: str) -> list[int]:
    env = os.environ.get("SUITE_WORLD_SIZES")
    if env:
        return [int(w) for w in env.split(",") if w.strip()]
    if device == "cuda":
        return list(range(1, max(torch.cuda.device_count(), 1) + 1))
    return [1, 2, 4]


def _at_world_sizes(case: str, name: str, devices, smallest: int = 1) -> list[LaunchPoint]:
    # More CPU ranks than the CI machine's 2 cores time contention, not the algorithm: slow.
    return [
        LaunchPoint.on(case, name, d, w, slow=d == "cpu" and w > 2)
        for d in devices
        for w in _world_sizes(d)
        if w >= smallest
    ]


def launches(points):
    """Decorator: the test runs once per `LaunchPoint` of ``points(devices)``."""

    def mark(test):
        test.launch_points = points
        return test

    return mark


def pytest_generate_tests(metafunc):
    make = getattr(metafunc.function, "launch_points", None)
    if make is not None:
        test = metafunc.function.__name__
        points = [dataclasses.replace(p, test=test) for p in make(options.devices(metafunc.config))]
        metafunc.parametrize("launch_point", points, ids=[p.id for p in points])


# ---- helpers -----------------------------------------------------------------------------------------


def require_ok(run: launch.Launch, what: str) -> None:
    """Fail with every rank's output when a launch failed or timed out."""
    if not run.ok:
        pytest.fail(f"{what}: {run.describe()}", pytrace=False)
    left = run.survivors()
    if left:
        pytest.fail(f"{what}: processes left behind: {left}", pytrace=False)


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


def bench(request, benchmark, group: str, row: tuple[dict, dict, list[float]]) -> None:
    """One benchmark row from a case's judge: its record, its extra keys, its replayed steps."""
    info, extra, times = row
    benchmark.group = group
    benchmark.extra_info.update(record.BenchmarkInfo(**info).to_data(), **extra)
    replay(request, benchmark, times)


def record_finding(request, check: str, finding: record.Finding) -> None:
    """A finding names its own check (``ddp_scaling-w2``), which names the test's outcome."""
    point = dict(request.node.user_properties)["point"]
    request.node.user_properties.append(("point", {**point, "check": check}))
    request.node.user_properties.append(("finding", finding.to_data()))


def _train_args(profile: str) -> list[str]:
    return [a for k, v in TRAIN_SIZES[profile].items() for a in (f"--{k}", str(v))]


class Runs:
    """Launches shared by the tests of one session (each is a few seconds of process start-up)."""

    def __init__(self, root: Path, profile: str):
        self.root, self.profile, self.done = root, profile, {}

    def train(self, device: str, world: int, nnodes: int = 1) -> launch.Launch:
        key = ("train", device, world, nnodes)
        if key not in self.done:
            args = ["train", "--device", device, *_train_args(self.profile)]
            out = self.root / f"train-{device}-w{world}-n{nnodes}"
            self.done[key] = launch.torchrun(
                WORKER, args, nproc=world // nnodes, nnodes=nnodes, out_dir=out, timeout_s=TIMEOUT_S
            )
        return self.done[key]

    def allreduce(self, device: str, world: int) -> launch.Launch:
        key = ("allreduce", device, world)
        if key not in self.done:
            sizes = ",".join(str(s) for s in allreduce.allreduce_message_sizes(self.profile, device))
            self.done[key] = launch.torchrun(
                WORKER,
                ["allreduce", "--device", device, "--sizes", sizes],
                nproc=world,
                out_dir=self.root / f"allreduce-{device}-w{world}",
                timeout_s=TIMEOUT_S,
            )
        return self.done[key]


@pytest.fixture(scope="session")
def runs(tmp_path_factory, request):
    return Runs(tmp_path_factory.mktemp("dist"), request.config.getoption("--profile"))


def _training(run: launch.Launch, mode: str) -> list[dict]:
    require_ok(run, f"train ({mode})")
    rows = run.results("train")
    check_training(rows, mode)
    return rows


def _allreduce(run: launch.Launch) -> tuple[list[dict], int]:
    require_ok(run, "allreduce")
    return allreduce.allreduce_table(run.results("allreduce"))


# ---- parallel.dp_vs_ddp: DDP at each world size ---------------------------------------------------


@launches(lambda devices: _at_world_sizes("parallel.dp_vs_ddp", "ddp", devices))
def test_ddp(launch_point, runs, benchmark, request):
    device, world = launch_point.device, launch_point.world
    rows = _training(runs.train(device, world), "ddp")
    info, extra, times = train_row(rows, "ddp", device)
    if world > 1:
        base = _training(runs.train(device, 1), "ddp")
        scaling, finding = dp_vs_ddp.ddp_scaling(rows, times, base)
        extra.update(scaling)
        record_finding(request, f"ddp_scaling-w{world}", finding)
        # The run's last lines and the report tabulate it per world size (suite.answer).
        request.node.user_properties.append(("measured", scaling))
    bench(request, benchmark, f"parallel.dp_vs_ddp w{world} {device}", (info, extra, times))


@launches(lambda devices: [LaunchPoint.on("parallel.dp_vs_ddp", "dp", "cuda", gpus=2)])
def test_dataparallel(launch_point, runs, benchmark, tmp_path, request):
    """nn.DataParallel: one process driving every GPU on the full batch (the DDP rows' baseline)."""
    run = launch.torchrun(
        WORKER,
        ["train", "--device", "cuda", "--modes", "dp", *_train_args(runs.profile)],
        nproc=1,
        out_dir=tmp_path,
        timeout_s=TIMEOUT_S,
    )
    info, extra, times = train_row(_training(run, "dp"), "dp", "cuda")
    extra["gpus"] = torch.cuda.device_count()
    group = f"parallel.dp_vs_ddp dp {torch.cuda.device_count()}gpu cuda"
    bench(request, benchmark, group, (info, extra, times))


# ---- parallel.average_gradient --------------------------------------------------------------------


@launches(lambda devices: _at_world_sizes("parallel.average_gradient", "", devices, smallest=2))
def test_average_gradient(launch_point, runs, benchmark, request):
    device, world = launch_point.device, launch_point.world
    rows = _training(runs.train(device, world), "avg_grad")
    versus, finding = average_gradient.average_gradient_vs_ddp(rows)
    record_finding(request, f"vs_ddp-w{world}", finding)
    info, extra, times = train_row(rows, "avg_grad", device)
    bench(request, benchmark, f"parallel.dp_vs_ddp w{world} {device}", (info, {**extra, **versus}, times))


# ---- parallel.allreduce -------------------------------------------------------------------------------


@launches(lambda devices: _at_world_sizes("parallel.allreduce", "", devices, smallest=2))
def test_allreduce(launch_point, runs, benchmark, request):
    device = launch_point.device
    table, p = _allreduce(runs.allreduce(device, launch_point.world))
    allreduce.check_allreduce(table, p)
    row, finding = allreduce.allreduce_cost_model(table, p, device)
    record_finding(request, f"cost_model-w{p}", finding)
    bench(request, benchmark, f"parallel.allreduce model w{p} {device}", row)


@launches(lambda devices: [LaunchPoint.on("parallel.allreduce", a, "cpu", 2) for a in ALLREDUCE])
def test_allreduce_sizes(launch_point, runs, benchmark, request):
    """One benchmark row per algorithm per message size at world size 2 on CPU (the sweep the
    reports plot: bus bandwidth vs size, one line per algorithm)."""
    table, p = _allreduce(runs.allreduce("cpu", launch_point.world))
    row = allreduce.allreduce_sweep_row(table, p, launch_point.name, "cpu")
    bench(request, benchmark, f"parallel.allreduce w{p} cpu", row)


# ---- dist.setup -------------------------------------------------------------------------------------


@launches(lambda devices: [LaunchPoint.on("dist.setup", "torchrun_env", "cpu", 2)])
def test_setup_torchrun(launch_point, tmp_path, request):
    device, world = launch_point.device, launch_point.world
    run = launch.torchrun(
        WORKER, ["setup", "--device", device], nproc=world, out_dir=tmp_path, timeout_s=TIMEOUT_S
    )
    require_ok(run, "setup")
    record_finding(request, "torchrun_env", S.judge_torchrun_env(run.results("setup"), world))


@launches(lambda devices: [LaunchPoint.on("dist.setup", "mp_spawn_tcp", "cpu", 2)])
def test_setup_spawn(launch_point, tmp_path, request):
    device, world = launch_point.device, launch_point.world
    run = launch.python_module(
        WORKER, ["spawn", "--device", device, "--world", str(world)], out_dir=tmp_path, timeout_s=TIMEOUT_S
    )
    require_ok(run, "mp.spawn")
    finding = S.judge_spawn(run.results("spawn-"), run.results("spawn_slip")[0], world)
    record_finding(request, "spawn_args_int", finding)


@launches(lambda devices: [LaunchPoint.on("dist.setup", "notes_local_rank", "cpu", 2)])
def test_notes_launch_local_rank(launch_point, tmp_path, request):
    """The notes' `python -m torch.distributed.launch` + `parser.add_argument("--local_rank")`."""
    port = launch.free_port()
    cmd = [
        launch.sys.executable,
        "-m",
        "torch.distributed.launch",
        f"--nproc-per-node={launch_point.world}",
        f"--master-port={port}",
        "-m",
        "cases.dist_launch_worker",
        "--out",
        str(tmp_path),
    ]
    run = launch.run([cmd], out_dir=tmp_path, timeout_s=TIMEOUT_S, port=port)
    require_ok(run, "torch.distributed.launch")
    finding = S.judge_notes_launch(run.results("notes_launch"), run.output, launch_point.world)
    record_finding(request, "notes_local_rank", finding)


# ---- several nodes, simulated on one machine -------------------------------------------------------


@launches(lambda devices: [LaunchPoint.on("parallel.dp_vs_ddp", "two_nodes", "cpu")])
def test_two_nodes(launch_point, runs, request):
    """Two torchrun launches (--nnodes=2, one rank each, c10d rendezvous on 127.0.0.1) train with
    DDP to the same parameters as one process on the full batch."""
    device = launch_point.device
    start = time.perf_counter()
    two = runs.train(device, 2, nnodes=2)
    wall = time.perf_counter() - start
    rows = _training(two, "ddp")
    one = runs.train(device, 1)
    _training(one, "ddp")
    a, b = (torch.load(r.out_dir / "params-ddp.pt") for r in (two, one))
    measured, finding = dp_vs_ddp.two_nodes_vs_one(rows, a, b, wall)
    request.node.user_properties.append(("measured", measured))
    record_finding(request, "two_nodes", finding)


# ---- faults: the launcher's guarantees, which every launch above relies on ---------------------------


@launches(lambda devices: [LaunchPoint.on("dist.setup", "fault_port_in_use", "cpu")])
def test_fault_port_in_use(launch_point, tmp_path):
    busy = launch.socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        taken = busy.getsockname()[1]
        assert not launch.port_is_free(taken)
        run = launch.torchrun(
            WORKER, ["fault", "--kind", "none"], nproc=2, out_dir=tmp_path, port=taken, timeout_s=TIMEOUT_S
        )
    finally:
        busy.close()
    require_ok(run, "launch with a busy preferred port")
    assert run.port != taken
    assert [r["sum"] for r in run.results("fault-")] == [2.0, 2.0]


@launches(lambda devices: [LaunchPoint.on("dist.setup", "fault_raising_rank", "cpu")])
def test_fault_raising_rank(launch_point, tmp_path):
    run = launch.torchrun(WORKER, ["fault", "--kind", "raise"], nproc=2, out_dir=tmp_path, timeout_s=30)
    assert not run.timed_out, f"a raising rank should end the launch, not hang it: {run.describe()}"
    assert run.wall_s < 30
    assert not run.ok
    with pytest.raises(pytest.fail.Exception) as failure:
        require_ok(run, "fault")
    message = str(failure.value)
    assert "injected fault on rank 1" in message and "Traceback" in message, message[-3000:]
    assert len(run.results("fault_started")) == 2, "both ranks should have started"
    assert len(run.tracked) >= 3, f"torchrun and its 2 ranks should have been tracked, saw {run.tracked}"
    assert run.survivors() == [], f"left behind: {run.survivors()}"


@launches(lambda devices: [LaunchPoint.on("dist.setup", "fault_hanging_rank", "cpu")])
def test_fault_hanging_rank(launch_point, tmp_path):
    timeout = 15.0  # both ranks reach the collective in ~5 s on the 2-core CI machine: 3x that
    run = launch.torchrun(WORKER, ["fault", "--kind", "hang"], nproc=2, out_dir=tmp_path, timeout_s=timeout)
    assert run.timed_out
    assert run.wall_s < timeout + launch.GRACE_S + 5
    with pytest.raises(pytest.fail.Exception, match="timed out"):
        require_ok(run, "fault")
    started = run.results("fault_started")
    assert len(started) == 2, (
        f"both ranks should have reached the collective before the timeout: {run.output[-2000:]}"
    )
    pids = {r["pid"] for r in started}
    assert pids <= set(run.tracked), "the ranks' PIDs were not tracked"
    assert run.survivors() == [], f"left behind: {run.survivors()}"
    assert not run.results("fault-"), "a rank finished the collective although one rank hung"
