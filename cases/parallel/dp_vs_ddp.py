"""DataParallel vs DistributedDataParallel (notes 002 "Multiple GPUs", 004 "GIL / DISTRIBUTED DATA
PARALLEL"): one process driving every GPU with threads against one process per device with a
bucketed all-reduce overlapped with backward.

In-process here: what DataParallel does with the GPUs this process sees (or none), DDP against
float64 full-batch training (from the shared equivalence launch), and the notes'
`device_ids=list(range(n))`. Launched (`cases._launch.dist_launches`, for `suite/test_distributed.py`):
DDP at each world size (`launched_ddp`, its scaling `ddp_scaling`), DataParallel on every GPU
(`launched_dataparallel`) and DDP on two simulated nodes (`launched_two_nodes`, `two_nodes_vs_one`).
"""

from __future__ import annotations

import copy
import os
import time
from statistics import median

import torch
import torch.distributed as dist
from torch import nn

from cases._launch import isolated as _isolated
from cases._launch.dist_launches import LaunchRecord, Runs
from cases._launch.launched_training import (
    equivalence_bound,
    equivalence_ranks,
    step_times,
    train_row,
    trained,
)
from cases._lib.data_parallel import U32, make_batch, make_mlp, tensor_errors, train_tolerance
from cases._lib.precision import ieee_fp32
from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict
from harness.contract import gain
from harness.contract.rules import FromFindings
from harness.machine import premises
from harness.measure import device as harness_device

# ---- DataParallel with the GPUs this process sees ---------------------------------------------------


def _abs_chain(model: nn.Sequential, x: torch.Tensor) -> tuple[torch.Tensor, float]:
    """(|W_L|…|W_1||x| with the biases' magnitudes, in float64; Σ_l (K_l + 1)·u): a first-order
    bound on fp32 rounding through Linear layers is their product. ReLU only shrinks magnitudes
    and passes errors through unamplified, so skipping it in the chain keeps the bound."""
    h, gamma = x.detach().double().abs().cpu(), 0.0
    for layer in model:
        if isinstance(layer, nn.Linear):
            h = h @ layer.weight.detach().double().abs().cpu().T + layer.bias.detach().double().abs().cpu()
            gamma += (layer.in_features + 1) * U32
    return h, gamma


@ieee_fp32
def dataparallel_probe(device: str) -> dict:
    """nn.DataParallel around a small MLP on `device`, with whatever GPUs this process sees: what it
    did, as plain data (it may run in a fresh process, see `check_dataparallel_without_gpus`)."""
    dev = torch.device("cuda", 0) if device == "cuda" else torch.device(device)
    model = make_mlp(8, 16, 4, seed=0).to(dev)
    x, _ = make_batch(6, 8, 4, seed=0)
    x = x.to(dev)
    reference = copy.deepcopy(model)  # the plain module, out of DataParallel's reach
    wrapped = nn.DataParallel(model)
    with torch.no_grad():
        out, plain = wrapped(x), reference(x)
        truth = copy.deepcopy(reference).cpu().double()(x.cpu().double())
    chain, gamma = _abs_chain(reference, x)
    return {
        "gpus": premises.gpu_count(),
        "device_ids": list(wrapped.device_ids),
        "module_device": str(next(wrapped.module.parameters()).device),
        "output_device": str(out.device),
        "bitwise_equal": bool(torch.equal(out, plain.to(out.device))),
        "max_abs_err": (out.cpu().double() - truth).abs().max().item(),
        "bound": 2 * gamma * chain.max().item(),  # 2×: second-order terms and slack
    }


def judge_dataparallel(result: dict, where: str) -> Finding:
    """The finding from what `dataparallel_probe` saw: 0 GPUs, the module itself runs; 1, it runs on
    cuda:0 unreplicated; N, replicas on every GPU, outputs gathered on cuda:0."""
    n, ids = result["gpus"], result["device_ids"]
    err, bound = result["max_abs_err"], result["bound"]
    assert err <= bound, f"DataParallel's output is {err:.3g} off float64, beyond fp32 rounding ({bound:.3g})"
    if n == 0:
        assert ids == [], f"no GPU visible, yet DataParallel took device_ids={ids}"
        assert result["bitwise_equal"], "DataParallel without GPUs changed the module's output"
        return Finding(
            None,
            f"in {where}, with no GPU visible, nn.DataParallel runs the module unchanged "
            "(device_ids=[], output bitwise equal): no replication, no scatter — DP numbers need "
            ">= 2 GPUs",
        )
    on = (result["module_device"], result["output_device"])
    assert on == ("cuda:0", "cuda:0"), f"DataParallel with {n} GPU(s): module and output on {on}"
    if n == 1:
        assert ids == [0], f"one GPU visible, yet DataParallel took device_ids={ids}"
        assert result["bitwise_equal"], "DataParallel on one GPU changed the module's output"
        return Finding(
            None,
            "with 1 GPU nn.DataParallel moves the module to cuda:0 and runs it there "
            "unreplicated (output bitwise equal to the module's) — DP numbers need >= 2 GPUs",
        )
    assert ids == list(range(n)), f"DataParallel should take every visible GPU ({n}), took {ids}"
    return Finding(
        None,
        f"DataParallel over {n} GPUs (device_ids={ids}): the batch scattered, replicas run, "
        f"outputs gathered on cuda:0 within fp32 rounding of float64 ({err:.2g} ≤ {bound:.2g})",
    )


def check_dataparallel_without_gpus(device):
    """What `nn.DataParallel` does where there is nothing to parallelise over (`cpu`) and with the
    GPUs present (`cuda`). DataParallel takes every GPU the process sees and moves the module to
    cuda:0, so on a machine with GPUs the `cpu` question is asked in a fresh process that sees none
    (CUDA_VISIBLE_DEVICES='')."""
    gpus = premises.gpu_count()
    if device.type == "cpu" and gpus > 0:
        outcome = _isolated.run(
            "cases.parallel.dp_vs_ddp:dataparallel_probe", "cpu", env={"CUDA_VISIBLE_DEVICES": ""}
        )
        assert outcome.error is None, f"the probe raised in the fresh process: {outcome.error}"
        where = f"a fresh process with CUDA_VISIBLE_DEVICES='' ({gpus} GPU(s) hidden)"
        return judge_dataparallel(outcome.value, where)
    return judge_dataparallel(dataparallel_probe(device.type), "this process")


# ---- DDP against float64 full-batch training (the shared equivalence launch) ------------------------


def check_ddp_full_batch(device):
    """DDP on 2 gloo ranks, each on its shard, after k SGD steps, against float64 full-batch training
    in one process from the same weights (the catalogue's check; DataParallel needs >= 2 GPUs)."""
    rows = equivalence_ranks()
    r = rows[0]
    return judge_ddp_full_batch(
        max(max(x["ddp_params_rel_err"]) for x in rows),
        max(r["single_params_rel_err"]),
        equivalence_bound(rows),
        len({x["ddp_params_sha1"] for x in rows}) == 1,
        r["losses_float64"],
        r["world_size"],
        r["steps"],
    )


def judge_ddp_full_batch(
    error: float,
    single: float,
    bound: float,
    replicas_equal: bool,
    losses: list[float],
    world: int,
    steps: int,
) -> Finding:
    """Holds where DDP's parameters after `steps` steps are within the bound of float64 full-batch
    training on every rank and identical across ranks. The bound assumes a contracting run (the
    float64 loss fell); where it rose, no bound applies and nothing is concluded."""
    where = (
        f"DDP over {world} gloo processes, {steps} SGD steps on shards: parameters within {error:.2g} of "
        f"float64 full-batch training norm-wise (bound {bound:.2g}; one fp32 process on the full batch: "
        f"{single:.2g}); replicas bitwise equal: {replicas_equal}"
    )
    if losses[-1] >= losses[0]:
        return Finding(None, where + f"; the float64 loss rose {losses[0]:.3g} → {losses[-1]:.3g}: no bound")
    held = error <= bound and replicas_equal
    return Finding(Verdict.HOLDS if held else Verdict.FAILS, where)


# ---- the notes' device_ids -------------------------------------------------------------------------


def check_ddp_device_ids(device):
    """004: `DDP(model, device_ids=list(range(torch.cuda.device_count())))`. Current DDP takes one
    device per process: asked of the installed DDP with two devices, and with the notes' expression
    as it evaluates here, in a one-process gloo group (an in-memory store)."""
    notes_ids = list(range(torch.cuda.device_count()))
    own_group = not dist.is_initialized()
    if own_group:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    outcomes = {}
    try:
        for name, ids in (("two", [0, 1]), ("notes", notes_ids)):
            on_gpu = name == "notes" and notes_ids  # the notes' list names GPUs where there are some
            module = nn.Linear(4, 2).to("cuda:0" if on_gpu else "cpu")
            try:
                nn.parallel.DistributedDataParallel(module, device_ids=ids)
                outcomes[name] = ""
            except (ValueError, RuntimeError) as exc:
                outcomes[name] = f"{type(exc).__name__}: {exc}"
    finally:
        if own_group:
            dist.destroy_process_group()
    return judge_ddp_device_ids(outcomes["two"], notes_ids, outcomes["notes"], torch.__version__)


def judge_ddp_device_ids(two_error: str, notes_ids: list[int], notes_error: str, version: str) -> Finding:
    """The notes (004) wrap the model, in each process mp.spawn starts, with every GPU of the
    machine: `DDP(model, device_ids=list(range(device_count())))`. Fails where the installed DDP
    refuses a list of two devices (every machine this multi-GPU recipe is for has two); holds
    where it takes them. What the list is on this machine, and what DDP does with it, is said."""
    here = f"here the notes' list(range(device_count())) is {notes_ids}: " + (
        f"DDP raises {notes_error[:120]}" if notes_error else "DDP accepts it"
    )
    if not two_error:
        return Finding(Verdict.HOLDS, f"torch {version}: DDP accepts device_ids=[0, 1]; " + here)
    return Finding(
        Verdict.FAILS,
        f"torch {version}: with 2 or more GPUs the notes' line raises {two_error[:120]} (DDP takes one "
        f"device per process); {here}; use device_ids=[rank] (the process's own GPU), as 000's "
        "device_ids=[args.local_rank] does",
    )


# ---- the case ----------------------------------------------------------------------------------------

CASE = Case(
    id="parallel.dp_vs_ddp",
    tier=1,
    claim="DistributedDataParallel (one process per device, bucketed all-reduce overlapped with "
    "backward) scales better than DataParallel (one process, threads, GIL); both train like one device.",
    source="002 Multiple GPUs, 004 GIL / DISTRIBUTED DATA PARALLEL",
    claims=(
        Claim(
            "ddp_faster_than_dp",
            "Pytorch中DistributedDataParallel为multiprocessing，为每一个GPU创建一个进程；然而DataParallel为一个进程"
            "创建多个线程，每一个GPU是一个线程，性能很容易受到GIL带来的影响。",
            "004",
            ClaimKind.SPEED,
        ),
        Claim(
            "ddp_synchronous",
            "The model is replicated on all the devices; each replica calculates gradients and "
            "simultaneously synchronizes with the others using the [ring all-reduce algorithm]"
            "(https://tech.preferred.jp/en/blog/technologies-behind-distributed-deep-learning-allreduce/). "
            "(同步更新)",
            "004",
            ClaimKind.CORRECTNESS,
            reading="DDP keeps every replica equal and each step equal to full-batch training "
            "(a synchronous update); which all-reduce algorithm the backend runs (gloo here; NCCL may "
            "pick ring or tree) is not observed",
        ),
        Claim(
            "multi_node",
            "创建 nnodes 个node, 每个 node 有 nproc_per_node 个进程(一般为 GPU 数量)，"
            "每个进程独立执行脚本训练。 … "
            "以 0 为主节点，使用其 addr:port 作为 master 的参数 (可以用为局域网内训练)",
            "000",
            ClaimKind.BEHAVIOUR,
            reading="nnodes launches of nproc_per_node processes, meeting at node 0's address, train "
            "as one group; launched with torchrun --nnodes=2 (c10d rendezvous on 127.0.0.1), a stand-in "
            "for the notes' torch.distributed.launch --master_addr/--master_port",
        ),
        Claim(
            "ddp_device_ids",
            "gpu_id = list(range(torch.cuda.device_count())) … model = DDP(model,device_ids=gpu_id)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="in each spawned process, DDP wraps the model with every GPU of the machine as "
            "its device_ids",
        ),
    ),
    checks={
        # What DataParallel does with the GPUs in sight: context (no replication below 2 GPUs).
        "dataparallel_without_gpus": Check(check_dataparallel_without_gpus),
        "ddp_equals_full_batch": Check(check_ddp_full_batch, devices=("cpu",), claim="ddp_synchronous"),
        "ddp_device_ids": Check(check_ddp_device_ids, devices=("cpu",), claim="ddp_device_ids"),
    },
    # The launched points (suite/test_distributed.py): the name their finding records under, and the
    # point's own name (recorded where the launch failed or was skipped: DataParallel below 2 GPUs,
    # so the speed claim reads `not measured` with the skip's reason). DDP's scaling is context.
    launched={
        "ddp_vs_dp": "ddp_faster_than_dp",
        "test_dataparallel-dp-cuda": "ddp_faster_than_dp",
        "two_nodes": "multi_node",
        "test_two_nodes-two_nodes-cpu": "multi_node",
    },
    requires=("distributed", "ieee_fp32"),  # ieee_fp32: see harness.machine.requirements
    verdict=FromFindings(),
    # Timed in worker processes (suite/test_distributed.py), not as variants the suite could compile.
    uncompilable={
        "dp": "a training step across devices: DataParallel's threads and DDP's bucketed all-reduce "
        "are what is compared, not a tensor program torch.compile could fuse",
    },
)


# ---- judging the launched runs -----------------------------------------------------------------------


def ddp_scaling(
    rows: list[dict], times: list[float], base: list[dict], cores: int | None = None
) -> tuple[dict, Finding]:
    """Strong scaling: the same global batch at world N as at 1 (`base`), so the ideal is
    T_N = T_1 / N and the efficiency T_1 / (N·T_N). `cores`: the CPU cores the ranks share (None on
    GPUs); more CPU ranks than cores take turns on a core, and the efficiency then says how the
    scheduler shared them, which the text says."""
    world = rows[0]["world_size"]
    t1 = median(step_times(base, "ddp"))
    step = median(times)
    efficiency = t1 / (world * step)
    measured = {"world_size": world, "step_s": step, "t1_s": t1, "scaling_efficiency": efficiency}
    shared = (
        f" ({world} ranks on {cores} cores: they take turns on a core, so this measures the sharing, not DDP)"
        if cores is not None and world > cores
        else ""
    )
    return measured, Finding(
        None,
        f"DDP over {rows[0]['backend']}, {rows[0]['params'] / 1e6:.1f} M params, global batch "
        f"{rows[0]['batch']}: step {step * 1e3:.1f} ms at world {world} vs "
        f"{t1 * 1e3:.1f} ms at 1, scaling efficiency T1/(N·TN) = {efficiency:.2f}{shared}",
    )


def two_nodes_vs_one(
    rows: list[dict], two: torch.Tensor, one: torch.Tensor, wall_s: float
) -> tuple[dict, Finding]:
    """Two single-rank nodes (their rank files `rows`, final parameters `two`) against one
    process on the full batch (`one`)."""
    worlds = sorted({r["world_size"] for r in rows})
    assert len(rows) == 2 and worlds == [2], (  # the launch, not the technique
        f"two nodes × 1 rank: {len(rows)} rank files, world sizes {worlds}"
    )
    error = max(tensor_errors(two, one, rows[0]["param_numels"]))
    bound = train_tolerance(rows[0]["batch"], rows[0]["width"])
    steps = rows[0]["warmup"] + rows[0]["steps"]
    return {"wall_s": wall_s, "max_rel_err": error}, judge_two_nodes(error, bound, steps, wall_s)


def judge_two_nodes(error: float, bound: float, steps: int, wall_s: float) -> Finding:
    """Two simulated nodes against one process. Beyond the bound: fails. Within it: depends, on the
    launcher, since the nodes were started by torchrun (c10d rendezvous), a stand-in for the
    notes' torch.distributed.launch with --master_addr/--master_port, whose script they also
    give a --local_rank parser that launch's --local-rank now stops (dist.setup's local_rank)."""
    seen = (
        f"2 simulated nodes × 1 rank (torchrun --nnodes=2, c10d rendezvous): parameters within "
        f"{error:.2g} of one process's (norm-wise, per tensor; bound {bound:.2g}) after {steps} steps; "
        f"wall {wall_s:.1f} s"
    )
    if error > bound:
        return Finding(Verdict.FAILS, seen)
    return Finding(
        Verdict.DEPENDS,
        "depends on the launcher: two nodes train as one group under torchrun, the stand-in launched "
        "here; the notes' own `python -m torch.distributed.launch ... env_init.py` was not run across "
        "nodes. " + seen,
    )


def launched_ddp(runs: Runs, device: str, world: int) -> LaunchRecord:
    """DDP's row at `world` ranks and, beyond one, its scaling against the world-1 run."""
    rows = trained(runs.train(device, world), "ddp")
    info, extra, times = train_row(rows, "ddp", device)
    group = f"parallel.dp_vs_ddp w{world} {device}"
    if world == 1:
        return LaunchRecord(group=group, row=(info, extra, times))
    cores = len(os.sched_getaffinity(0)) if device == "cpu" else None
    scaling, finding = ddp_scaling(rows, times, trained(runs.train(device, 1), "ddp"), cores)
    # The run's last lines and the report tabulate it per world size (reports.answer).
    return LaunchRecord(f"ddp_scaling-w{world}", finding, group, (info, {**extra, **scaling}, times), scaling)


def judge_ddp_faster_than_dp(dp_s: list[float], ddp_s: list[float], gpus: int, band: float) -> Finding:
    """The notes: DDP (a process per GPU) outperforms DataParallel (a thread per GPU, GIL-bound).
    Step i of DataParallel on the full batch against step i of DDP at world = `gpus` on the same
    global batch: DDP faster when the ratio's 95% interval lies above 1 + `band` (holds), slower
    below 1/(1 + band) (fails); an interval inside the band or crossing its edge: depends (no
    measurable difference at this model size and GPU count). Below `gain.MIN_PAIRS` steps, every
    step of one side must beat every step of the other by the band."""
    n = min(len(dp_s), len(ddp_s))
    ratio = gain.paired_ratio(dp_s[:n], ddp_s[:n])
    seen = gain.classify(ratio, band)
    if seen is gain.Gain.UNCLEAR and ratio.n < gain.MIN_PAIRS and n:
        # Too few steps for an interval (the quick profile's 5): every step against every step.
        if min(dp_s[:n]) > (1 + band) * max(ddp_s[:n]):
            seen = gain.Gain.FASTER
        elif max(dp_s[:n]) * (1 + band) < min(ddp_s[:n]):
            seen = gain.Gain.SLOWER
    verdict = {gain.Gain.FASTER: Verdict.HOLDS, gain.Gain.SLOWER: Verdict.FAILS}.get(seen, Verdict.DEPENDS)
    return Finding(
        verdict,
        f"{gpus} GPUs, same global batch: DataParallel {median(dp_s) * 1e3:.1f} ms/step, DDP "
        f"{median(ddp_s) * 1e3:.1f} ms/step; DP/DDP = {ratio} over {n} steps: {seen.value} "
        f"(band ±{band:.0%})",
    )


def launched_dataparallel(runs: Runs, out_dir) -> LaunchRecord:
    """nn.DataParallel: one process driving every GPU on the full batch, and the notes' claim that
    DDP at world = the GPU count beats it."""
    info, extra, times = train_row(trained(runs.dataparallel(out_dir), "dp"), "dp", "cuda")
    gpus = harness_device.cuda_count()
    ddp = step_times(trained(runs.train("cuda", gpus), "ddp"), "ddp")
    return LaunchRecord(
        "ddp_vs_dp",
        judge_ddp_faster_than_dp(times, ddp, gpus, gain.delta()),
        group=f"parallel.dp_vs_ddp dp {gpus}gpu cuda",
        row=(info, {**extra, "gpus": gpus}, times),
    )


def launched_two_nodes(runs: Runs, device: str) -> LaunchRecord:
    """Two torchrun launches (--nnodes=2, one rank each, c10d rendezvous on 127.0.0.1) train with
    DDP to the same parameters as one process on the full batch."""
    start = time.perf_counter()
    two = runs.train(device, 2, nnodes=2)
    wall = time.perf_counter() - start
    rows = trained(two, "ddp")
    one = runs.train(device, 1)
    trained(one, "ddp")
    a, b = (torch.load(r.out_dir / "params-ddp.pt") for r in (two, one))
    measured, finding = two_nodes_vs_one(rows, a, b, wall)
    return LaunchRecord("two_nodes", finding, measured=measured)
