"""Distributed cases: launch `cases.dist_worker` with torchrun, turn its per-rank JSON into checks,
findings and benchmark rows.

Timings: the ranks time their own steps (device synchronized before each clock read) and the
slowest rank's time per step is the step time. pytest-benchmark cannot time a subprocess's steps,
so those times are handed to it by `replay`: `benchmark.pedantic` runs one round per measured
step against a clock that advances by exactly that step's time. `benchmarks[].stats.data` then
holds the per-step times like any other row, and `extra_info` holds the rest (world size,
samples/s, scaling efficiency, bytes sent, bus bandwidth, the α–β model).

World sizes: ``SUITE_WORLD_SIZES`` (e.g. "1,2,4"), else 1 and 2, plus 4 marked slow on CPU, and
1..N on N GPUs. Launches are cached for the session, so a run is shared by the tests that read it.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import pytest
import torch

from cases import parallel as P
from harness import launch, requirements
from suite import options

WORKER = "cases.dist_worker"
TIMEOUT_S = 180.0

pytestmark = pytest.mark.distributed


# ---- parametrisation --------------------------------------------------------------------------------


def _world_sizes(device: str) -> list[int]:
    env = os.environ.get("SUITE_WORLD_SIZES")
    if env:
        return [int(w) for w in env.split(",") if w.strip()]
    if device == "cuda":
        return list(range(1, max(torch.cuda.device_count(), 1) + 1))
    return [1, 2, 4]


def _world_param(device: str, world: int, prefix: str):
    marks = []
    if device == "cuda":
        marks.append(pytest.mark.gpu)
        if world >= 2:
            marks.append(pytest.mark.multigpu)
    elif world > 2:
        marks.append(pytest.mark.slow)
    return pytest.param((device, world), id=f"{prefix}-w{world}-{device}", marks=marks)


def pytest_generate_tests(metafunc):
    devices = options.devices(metafunc.config)
    for name, prefix in (("ddp_point", "parallel.dp_vs_ddp-ddp"), ("avg_point", "parallel.average_gradient"),
                         ("allreduce_world", "parallel.allreduce")):
        if name in metafunc.fixturenames:
            params = [_world_param(d, w, prefix) for d in devices for w in _world_sizes(d)
                      if not (name != "ddp_point" and w == 1)]
            metafunc.parametrize(name, params)


def _skip_unless_runnable(device: str, world: int) -> None:
    """One process per GPU over NCCL on CUDA (dist_worker's backend there), gloo on CPU."""
    needs = ("distributed",) + ((f"gpus>={world}", "nccl") if device == "cuda" else ())
    reason = requirements.unmet(needs, device)
    if reason:
        pytest.skip(reason)


# ---- helpers -----------------------------------------------------------------------------------------


def require_ok(run: launch.Launch, what: str) -> None:
    """Fail with every rank's output when a launch failed or timed out."""
    if not run.ok:
        pytest.fail(f"{what}: {run.describe()}", pytrace=False)
    left = run.survivors()
    if left:
        pytest.fail(f"{what}: processes left behind: {left}", pytrace=False)


def replay(benchmark, seconds: list[float]) -> None:
    """Give pytest-benchmark the step times the ranks measured (see the module docstring)."""
    if not hasattr(benchmark, "_timer"):
        pytest.skip("this pytest-benchmark has no replaceable timer; times are in extra_info")
    clock, steps = [0.0], iter(seconds)

    def advance():
        clock[0] += next(steps, 0.0)

    benchmark._timer = lambda: clock[0]
    benchmark.pedantic(advance, rounds=len(seconds), iterations=1, warmup_rounds=0)


def record_finding(request, case_id: str, check: str, device: str, verdict, evidence: str) -> None:
    """Put a finding into the results ledger the same way the generic `test_rule` does."""
    request.node.user_properties.append(("point", {"case": case_id, "kind": "check", "check": check, "device": device}))
    request.node.user_properties.append(
        ("finding", {"verdict": verdict.value if verdict is not None else None, "evidence": evidence}))


def slowest_rank(rows: list[dict], pick) -> list[float]:
    """Per step, the slowest rank's time: a step is done when every rank is."""
    return [max(step) for step in zip(*(pick(r) for r in rows))]


class Runs:
    """Launches shared by the tests of one session (each is a few seconds of process start-up)."""

    def __init__(self, root: Path, profile: str):
        self.root, self.profile, self.done = root, profile, {}

    def train(self, device: str, world: int, nnodes: int = 1) -> launch.Launch:
        key = ("train", device, world, nnodes)
        if key not in self.done:
            full = self.profile == "full"
            args = ["train", "--device", device, "--width", "4096" if full else "1024",
                    "--batch", "1024" if full else "64", "--steps", "20" if full else "5"]
            out = self.root / f"train-{device}-w{world}-n{nnodes}"
            self.done[key] = launch.torchrun(WORKER, args, nproc=world // nnodes, nnodes=nnodes,
                                             out_dir=out, timeout_s=TIMEOUT_S)
        return self.done[key]

    def allreduce(self, device: str, world: int) -> launch.Launch:
        key = ("allreduce", device, world)
        if key not in self.done:
            top = 28 if self.profile == "full" and device == "cuda" else 26
            step = 2 if self.profile == "full" else 4
            sizes = ",".join(str(1 << k) for k in range(10, top + 1, step))
            self.done[key] = launch.torchrun(WORKER, ["allreduce", "--device", device, "--sizes", sizes],
                                             nproc=world, out_dir=self.root / f"allreduce-{device}-w{world}",
                                             timeout_s=TIMEOUT_S)
        return self.done[key]


@pytest.fixture(scope="session")
def runs(tmp_path_factory, request):
    return Runs(tmp_path_factory.mktemp("dist"), request.config.getoption("--profile"))


# ---- parallel.dp_vs_ddp: DDP at each world size ---------------------------------------------------


def _check_training(run, mode: str) -> list[dict]:
    require_ok(run, f"train ({mode})")
    rows = run.results("train")
    assert len(rows) == rows[0]["world_size"], f"{len(rows)} rank files for world size {rows[0]['world_size']}"
    for r in rows:
        m = r["modes"][mode]
        assert m["params_within_tol"], (
            f"rank {r['rank']} {mode}: parameters differ from full-batch training by {m['params_max_abs_diff']:.3g} "
            f"(tol {m['tol']})")
        assert m["grad_within_tol"], f"rank {r['rank']} {mode}: first gradient off by {m['grad_max_abs_diff']:.3g}"
    digests = {r["modes"][mode]["params_sha1"] for r in rows}
    assert len(digests) == 1, f"{mode}: ranks ended with different parameters"
    return rows


def _train_extra(rows, mode, times, device) -> dict:
    world, batch = rows[0]["world_size"], rows[0]["batch"]
    median = statistics.median(times)
    return {
        "case": "parallel.dp_vs_ddp" if mode in ("ddp", "dp") else "parallel.average_gradient",
        "kind": "distributed", "variant": mode, "role": {"dp": "naive", "ddp": "optimized", "avg_grad": "naive"}[mode],
        "size": {"world_size": world, "batch": batch}, "size_label": f"w{world}-batch{batch}", "x": "world_size",
        "dtype": "float32", "device": device, "backend": rows[0]["backend"], "params": rows[0]["params"],
        "step_s": times, "samples_per_s": batch / median,
        "params_max_abs_diff": max(r["modes"][mode]["params_max_abs_diff"] for r in rows),
    }


def test_ddp(ddp_point, runs, benchmark, request):
    device, world = ddp_point
    _skip_unless_runnable(device, world)
    rows = _check_training(runs.train(device, world), "ddp")
    times = slowest_rank(rows, lambda r: r["modes"]["ddp"]["step_s"])
    extra = _train_extra(rows, "ddp", times, device)
    if world > 1:
        # Strong scaling: the same global batch, so the ideal is T_N = T_1 / N.
        base = _check_training(runs.train(device, 1), "ddp")
        t1 = statistics.median(slowest_rank(base, lambda r: r["modes"]["ddp"]["step_s"]))
        efficiency = t1 / (world * statistics.median(times))
        extra.update(t1_s=t1, scaling_efficiency=efficiency)
        record_finding(request, "parallel.dp_vs_ddp", f"ddp_scaling-w{world}", device, None,
                       f"DDP over {rows[0]['backend']}, {rows[0]['params'] / 1e6:.1f} M params, global batch "
                       f"{rows[0]['batch']}: step {statistics.median(times) * 1e3:.1f} ms at world {world} vs "
                       f"{t1 * 1e3:.1f} ms at 1, scaling efficiency T1/(N·TN) = {efficiency:.2f}")
    benchmark.group = f"parallel.dp_vs_ddp w{world} {device}"
    benchmark.extra_info.update(extra)
    replay(benchmark, times)


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.parametrize("device", ["cuda"], ids=["parallel.dp_vs_ddp-dp-cuda"])
def test_dataparallel(device, runs, benchmark, tmp_path):
    """nn.DataParallel: one process driving every GPU on the full batch (the DDP rows' baseline)."""
    reason = requirements.unmet(("gpus>=2", "nccl"), device)
    if reason:
        pytest.skip(reason)
    full = runs.profile == "full"
    run = launch.torchrun(WORKER, ["train", "--device", "cuda", "--modes", "dp", "--width", "4096" if full else "1024",
                                   "--batch", "1024" if full else "64", "--steps", "20" if full else "5"],
                          nproc=1, out_dir=tmp_path, timeout_s=TIMEOUT_S)
    rows = _check_training(run, "dp")
    times = rows[0]["modes"]["dp"]["step_s"]
    benchmark.group = f"parallel.dp_vs_ddp dp {torch.cuda.device_count()}gpu cuda"
    benchmark.extra_info.update(_train_extra(rows, "dp", times, "cuda"), gpus=torch.cuda.device_count())
    replay(benchmark, times)


# ---- parallel.average_gradient --------------------------------------------------------------------


def test_average_gradient(avg_point, runs, benchmark, request):
    device, world = avg_point
    _skip_unless_runnable(device, world)
    rows = _check_training(runs.train(device, world), "avg_grad")
    tol = P.PARAM_TOL[torch.float32]
    for r in rows:
        diff = r["avg_grad_vs_ddp"]["grad_max_abs_diff"]
        assert diff <= tol.atol, f"rank {r['rank']}: manual averaging differs from DDP's gradient by {diff:.3g}"
    bitwise = all(r["avg_grad_vs_ddp"]["bitwise_equal"] for r in rows)
    times = slowest_rank(rows, lambda r: r["modes"]["avg_grad"]["step_s"])
    ddp = statistics.median(slowest_rank(rows, lambda r: r["modes"]["ddp"]["step_s"]))
    record_finding(request, "parallel.average_gradient", f"vs_ddp-w{world}", device, None,
                   f"all_reduce after backward gives DDP's gradients ({'bitwise' if bitwise else 'within fp32 tolerance'}); "
                   f"step {statistics.median(times) * 1e3:.1f} ms vs DDP's {ddp * 1e3:.1f} ms at world {world}")
    benchmark.group = f"parallel.dp_vs_ddp w{world} {device}"
    benchmark.extra_info.update(_train_extra(rows, "avg_grad", times, device), case="parallel.average_gradient",
                                bitwise_equal_to_ddp=bitwise)
    replay(benchmark, times)


# ---- parallel.allreduce -------------------------------------------------------------------------------


def _allreduce_table(run) -> tuple[list[dict], int]:
    require_ok(run, "allreduce")
    ranks = run.results("allreduce")
    p = ranks[0]["world_size"]
    table = []
    for i, row in enumerate(ranks[0]["rows"]):
        per_rank = [r["rows"][i] for r in ranks]
        times = [max(ts) for ts in zip(*(pr["times_s"] for pr in per_rank))]
        table.append({**row, "p": p, "times_s": times, "median_s": statistics.median(times),
                      "bytes_sent_per_rank": [pr["bytes_sent"] for pr in per_rank],
                      "checked": [pr["within_bound"] for pr in per_rank], "errors": [pr["max_abs_err"] for pr in per_rank]})
    return table, p


def test_allreduce(allreduce_world, runs, benchmark, request):
    device, world = allreduce_world
    _skip_unless_runnable(device, world)
    table, p = _allreduce_table(runs.allreduce(device, world))
    for row in table:
        assert all(c in (True, None) for c in row["checked"]), (
            f"{row['algorithm']} at {row['bytes']} B: sum outside the fp32 bound on some rank ({row['errors']})")
        sent, s = row["bytes_sent_per_rank"], row["bytes"]
        if row["algorithm"] == "ring":  # exact for sizes divisible by p chunks of 4-byte elements
            assert all(abs(b - 2 * (p - 1) / p * s) <= 8 * p for b in sent), sent
        if row["algorithm"] == "naive":
            assert sent[0] == (p - 1) * s and all(b == s for b in sent[1:]), sent
    assert any(all(c is True for c in row["checked"]) for row in table), "no size was checked against the truth"
    fitted = [r for r in table if r["algorithm"] in ("naive", "master", "ring")]
    alpha, beta = P.fit_alpha_beta([(r["algorithm"], p, r["bytes"], r["median_s"]) for r in fitted])
    points = []
    for r in table:
        algbw, busbw = P.bus_bandwidth(r["bytes"], r["median_s"], p)
        points.append({"algorithm": r["algorithm"], "bytes": r["bytes"], "measured_s": r["median_s"],
                       "model_s": P.model_time(r["algorithm"], p, r["bytes"], alpha, beta),
                       "algbw": algbw, "busbw": busbw, "bytes_sent_rank0": r["bytes_sent_per_rank"][0]})
    predictions = [{"algorithm": a, "p": q, "bytes": r["bytes"], "model_s": P.model_time(a, q, r["bytes"], alpha, beta)}
                   for a in ("naive", "ring") for q in (2, 4, 8, 16, 64) for r in table if r["algorithm"] == a]
    rel = [abs(pt["model_s"] - pt["measured_s"]) / pt["measured_s"] for pt in points if pt["algorithm"] != "all_reduce"]
    big = max(r["bytes"] for r in table)
    at = {pt["algorithm"]: pt for pt in points if pt["bytes"] == big}
    ratio64 = P.model_time("naive", 64, big, alpha, beta) / P.model_time("ring", 64, big, alpha, beta)
    record_finding(
        request, "parallel.allreduce", f"cost_model-w{p}", device, P.Verdict.HOLDS,
        f"every algorithm equals the float64 sum within p·u·Σ|x|; bytes sent per rank counted: ring "
        f"2(p−1)/p·S, naive rank 0 (p−1)·S. α–β fit at p={p}: α={alpha * 1e6:.1f} µs, 1/β={1 / beta / 1e9:.2f} GB/s "
        f"(median |model−measured|/measured {statistics.median(rel):.0%}); at {big >> 20} MiB measured busbw "
        + ", ".join(f"{a} {pt['busbw'] / 1e9:.2f} GB/s" for a, pt in at.items())
        + f"; the model predicts naive/ring = {ratio64:.0f}× at p=64 for {big >> 20} MiB")
    benchmark.group = f"parallel.allreduce model w{p} {device}"
    benchmark.extra_info.update(
        case="parallel.allreduce", kind="distributed", variant="cost_model", role="library", device=device,
        size={"world_size": p}, size_label=f"w{p}", x="bytes", dtype="float32",
        alpha_s=alpha, beta_s_per_byte=beta, points=points, predictions=predictions,
        model="ring: 2(p-1)·α + 2(p-1)/p·S·β; naive/master: 2(p-1)·α + 2(p-1)·S·β")
    # One row per algorithm and size would need one test each; the times of the largest size
    # of the library all-reduce make this row's stats, every point is in extra_info["points"].
    replay(benchmark, next(r for r in table if r["algorithm"] == "all_reduce" and r["bytes"] == big)["times_s"])


@pytest.mark.parametrize("algorithm", list(P.ALLREDUCE), ids=[f"parallel.allreduce-{a}-w2-cpu" for a in P.ALLREDUCE])
def test_allreduce_sizes(algorithm, runs, benchmark, request):
    """One benchmark row per algorithm per message size at world size 2 on CPU (the sweep the
    reports plot: bus bandwidth vs size, one line per algorithm)."""
    _skip_unless_runnable("cpu", 2)
    table, p = _allreduce_table(runs.allreduce("cpu", 2))
    rows = [r for r in table if r["algorithm"] == algorithm]
    for r in rows:
        assert all(c in (True, None) for c in r["checked"]), f"{algorithm} at {r['bytes']} B: wrong sum"
    largest = rows[-1]
    algbw, busbw = P.bus_bandwidth(largest["bytes"], largest["median_s"], p)
    benchmark.group = f"parallel.allreduce w{p} cpu"
    benchmark.extra_info.update(
        case="parallel.allreduce", kind="distributed", variant=algorithm, role=P.ALLREDUCE_ROLES[algorithm],
        size={"bytes": largest["bytes"], "world_size": p}, size_label=f"bytes{largest['bytes']}-w{p}", x="bytes",
        dtype="float32", device="cpu", bytes_sent=largest["bytes_sent_per_rank"][0], algbw=algbw, busbw=busbw,
        sweep=[{"bytes": r["bytes"], "median_s": r["median_s"], "times_s": r["times_s"],
                "busbw": P.bus_bandwidth(r["bytes"], r["median_s"], p)[1]} for r in rows])
    replay(benchmark, largest["times_s"])


# ---- dist.setup -------------------------------------------------------------------------------------


def _check_setup_facts(facts: dict, world: int) -> None:
    assert facts["initialized"] and not facts["initialized_after_destroy"], "destroy_process_group left it initialized"
    assert facts["seeded_init_identical"], "the same seed on every rank should give identical weights"
    assert facts["after_ddp_identical"] and facts["after_ddp_equals_rank0"], "DDP did not broadcast rank 0's weights"
    assert facts["subgroup_sum"] == facts["subgroup_expected"], f"new_group all_reduce: {facts['subgroup_sum']}"
    assert facts["reload_equal"], "rank 0's module.state_dict() did not reload into a plain model"
    assert all(k.startswith("module.") for k in facts["ddp_state_dict_keys"])
    assert not facts["wrapped_state_dict_loads"], "the DDP wrapper's state_dict loaded into a plain model"
    if world > 1:
        assert not facts["unseeded_init_identical"], "different seeds gave identical weights"


@pytest.mark.parametrize("device", ["cpu"], ids=["dist.setup-torchrun_env-w2-cpu"])
def test_setup_torchrun(device, tmp_path, request):
    _skip_unless_runnable(device, 2)
    run = launch.torchrun(WORKER, ["setup", "--device", device], nproc=2, out_dir=tmp_path, timeout_s=TIMEOUT_S)
    require_ok(run, "setup")
    rows = run.results("setup")
    assert [r["rank"] for r in rows] == [0, 1]
    for r in rows:
        _check_setup_facts(r, 2)
        assert r["env"]["LOCAL_RANK"] == str(r["rank"]) and r["env"]["WORLD_SIZE"] == "2", r["env"]
    record_finding(request, "dist.setup", "torchrun_env", device, P.Verdict.HOLDS,
                   "torchrun + init_process_group(env://): RANK/LOCAL_RANK/WORLD_SIZE from the environment; "
                   "common seed → identical weights (and DDP broadcasts rank 0's anyway); new_group sums "
                   f"{rows[1]['subgroup_sum']:g} in the odd group; rank 0 saves module.state_dict() and it reloads "
                   f"into a plain model (the wrapper's keys are 'module.*' and fail: {rows[0]['wrapped_state_dict_error'][:80]}); "
                   "destroy_process_group → is_initialized() False")


@pytest.mark.parametrize("device", ["cpu"], ids=["dist.setup-mp_spawn_tcp-w2-cpu"])
def test_setup_spawn(device, tmp_path, request):
    _skip_unless_runnable(device, 2)
    run = launch.python_module(WORKER, ["spawn", "--device", device, "--world", "2"], out_dir=tmp_path,
                               timeout_s=TIMEOUT_S)
    require_ok(run, "mp.spawn")
    rows = run.results("spawn-")
    assert len(rows) == 2
    for r in rows:
        _check_setup_facts(r, 2)
    slip = run.results("spawn_slip")[0]
    assert slip["args_type"] == "int", slip
    assert slip["raised"] and "TypeError" in slip["error"], slip
    record_finding(request, "dist.setup", "spawn_args_int", device, P.Verdict.FAILS,
                   f"mp.spawn(main, args=(world_size), ...) passes args={slip['args']} ({slip['args_type']}, not a "
                   f"tuple); the spawned process dies with {slip['error']!r}; args=(world_size,) works "
                   "(same run: tcp:// init, sub-groups, rank-0 save all as expected)")


@pytest.mark.parametrize("device", ["cpu"], ids=["dist.setup-notes_local_rank-w2-cpu"])
def test_notes_launch_local_rank(device, tmp_path, request):
    """The notes' `python -m torch.distributed.launch` + `parser.add_argument("--local_rank")`."""
    port = launch.free_port()
    cmd = [launch.sys.executable, "-m", "torch.distributed.launch", "--nproc-per-node=2",
           f"--master-port={port}", "-m", "cases._notes_launch", "--out", str(tmp_path)]
    run = launch.run([cmd], out_dir=tmp_path, timeout_s=TIMEOUT_S, port=port)
    require_ok(run, "torch.distributed.launch")
    rows = run.results("notes_launch")
    assert len(rows) == 2
    for r in rows:
        assert r["fixed_local_rank"] == r["env_local_rank"] == r["rank"], r
    deprecated = "deprecated" in run.output
    broken = [r for r in rows if not r["notes_parser"]["ok"]]
    if broken:
        evidence = (f"torch {torch.__version__}: launch passes {rows[0]['argv'][0]!r}; the notes' "
                    f"add_argument('--local_rank') exits with {broken[0]['notes_parser']['error']!r}")
    else:
        evidence = f"the notes' --local_rank parser still parses launch's arguments ({rows[0]['argv']})"
    evidence += "; launch " + ("prints a FutureWarning: deprecated, use torchrun (LOCAL_RANK env)" if deprecated else "gave no deprecation warning")
    verdict = P.Verdict.FAILS if broken or deprecated else P.Verdict.HOLDS
    record_finding(request, "dist.setup", "notes_local_rank", device, verdict, evidence)


# ---- several nodes, simulated on one machine -------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu"], ids=["parallel.dp_vs_ddp-two_nodes-cpu"])
def test_two_nodes(device, runs, request):
    """Two torchrun launches (--nnodes=2, one rank each, c10d rendezvous on 127.0.0.1) train with
    DDP to the same parameters as one process on the full batch."""
    _skip_unless_runnable(device, 2)
    start = time.perf_counter()
    two = runs.train(device, 2, nnodes=2)
    wall = time.perf_counter() - start
    rows = _check_training(two, "ddp")
    assert len(rows) == 2 and {r["world_size"] for r in rows} == {2}
    one = runs.train(device, 1)
    _check_training(one, "ddp")
    a, b = (torch.load(r.out_dir / "params-ddp.pt") for r in (two, one))
    max_abs, excess = P.max_excess(a, b, P.PARAM_TOL[torch.float32])
    assert excess <= 0, f"two nodes vs one process: parameters differ by {max_abs:.3g}"
    request.node.user_properties.append(("measured", {"wall_s": wall, "max_abs_diff": max_abs}))
    record_finding(request, "parallel.dp_vs_ddp", "two_nodes", device, None,
                   f"2 simulated nodes × 1 rank (torchrun --nnodes=2, c10d rendezvous): parameters within "
                   f"{max_abs:.2g} of one process after {rows[0]['warmup'] + rows[0]['steps']} steps; wall {wall:.1f} s")


# ---- faults -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu"], ids=["dist.setup-fault_port_in_use-cpu"])
def test_fault_port_in_use(device, tmp_path):
    busy = launch.socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        taken = busy.getsockname()[1]
        assert not launch.port_is_free(taken)
        run = launch.torchrun(WORKER, ["fault", "--kind", "none"], nproc=2, out_dir=tmp_path, port=taken,
                              timeout_s=TIMEOUT_S)
    finally:
        busy.close()
    require_ok(run, "launch with a busy preferred port")
    assert run.port != taken
    assert [r["sum"] for r in run.results("fault-")] == [2.0, 2.0]


@pytest.mark.parametrize("device", ["cpu"], ids=["dist.setup-fault_raising_rank-cpu"])
def test_fault_raising_rank(device, tmp_path):
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


@pytest.mark.parametrize("device", ["cpu"], ids=["dist.setup-fault_hanging_rank-cpu"])
def test_fault_hanging_rank(device, tmp_path):
    timeout = 25.0
    run = launch.torchrun(WORKER, ["fault", "--kind", "hang"], nproc=2, out_dir=tmp_path, timeout_s=timeout)
    assert run.timed_out
    assert run.wall_s < timeout + launch.GRACE_S + 5
    with pytest.raises(pytest.fail.Exception, match="timed out"):
        require_ok(run, "fault")
    started = run.results("fault_started")
    assert len(started) == 2, f"both ranks should have reached the collective before the timeout: {run.output[-2000:]}"
    pids = {r["pid"] for r in started}
    assert pids <= set(run.tracked), "the ranks' PIDs were not tracked"
    assert run.survivors() == [], f"left behind: {run.survivors()}"
    assert not run.results("fault-"), "a rank finished the collective although one rank hung"
