"""The distributed worker: one process per rank, launched by torchrun (or mp.spawn for `spawn`).

    python -m torch.distributed.run --nproc-per-node=2 -m cases._launch.dist_worker train --out DIR
    python -m cases._launch.dist_worker spawn --out DIR          (starts its own ranks with mp.spawn)

Tasks: ``train`` (DDP / manual gradient averaging / DataParallel against full-batch training),
``allreduce`` (four algorithms × message sizes), ``equivalence`` (manual averaging and DDP
against float64 full-batch training), ``setup`` (process-group set-up facts), ``spawn`` (mp.spawn
+ tcp:// init, 000's ``args=(world_size,)``), ``fault`` (a rank that raises or
hangs). Each rank writes ``DIR/<task>-rank<R>.json``. `cases._launch.dist_launches` launches it (and
`cases._launch.launched_training` for ``equivalence``); the judges of `cases.parallel` and
`cases.dist.setup` reads those files.

Backend from the device: NCCL with one GPU per process (LOCAL_RANK), gloo on CPU. Timings are
taken here, inside the ranks, with the device synchronized before each clock read: the pytest
process cannot see a worker's steps.

Importing this module has no side effects (`spawn`'s children import it by name). Not a case
module (a `*_worker`: the `cases` scan skips it). What the ranks train, the bounds they check and
the all-reduce algorithms come from `cases._lib` (`data_parallel`, `collectives`): a rank imports
no case.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from cases._lib import collectives
from cases._lib import data_parallel as DP
from harness.measure import device as harness_device
from harness.run import launch

D_IN = D_OUT = 256


# ---- plumbing -------------------------------------------------------------------------------------


def _device_for(kind: str, local_rank: int) -> torch.device:
    if kind == "cuda":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def _init(kind: str, init_method: str | None = None, rank: int | None = None, world: int | None = None):
    local_rank = int(os.environ.get("LOCAL_RANK", rank or 0))
    device = _device_for(kind, local_rank)
    backend = "nccl" if kind == "cuda" else "gloo"
    kw = {} if init_method is None else {"init_method": init_method, "rank": rank, "world_size": world}
    dist.init_process_group(backend, **kw)
    return dist.get_rank(), dist.get_world_size(), local_rank, device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        harness_device.of(device).synchronize()


def _write(out: str, task: str, rank: int, payload: dict) -> None:
    path = Path(out) / f"{task}-rank{rank}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"task": task, "rank": rank, **payload}, indent=1))
    tmp.replace(path)  # a reader never sees half a file


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha1(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


# ---- train ----------------------------------------------------------------------------------------


def _reference(base: nn.Module, x, y, steps: int, lr: float):
    """Full-batch single-device training from the same initial weights, and its first gradient."""
    model = copy.deepcopy(base)
    nn.functional.mse_loss(model(x), y).backward()
    first_grad = DP.flat_grads(model)
    model.zero_grad()
    DP.train_full_batch(model, x, y, steps, lr)
    return DP.flat_params(model), first_grad


def task_train(a) -> None:
    rank, world, local_rank, device = _init(a.device)
    assert a.batch % world == 0, "the global batch must split evenly for DDP to equal full-batch SGD"
    assert a.warmup >= 1
    x, y = DP.make_batch(a.batch, D_IN, D_OUT, a.seed)
    # DistributedSampler without shuffling: rank r gets samples r, r+p, r+2p, ...
    shard = list(
        torch.utils.data.DistributedSampler(range(a.batch), num_replicas=world, rank=rank, shuffle=False)
    )
    x_local, y_local = x[shard].to(device), y[shard].to(device)
    base = DP.make_mlp(D_IN, a.width, D_OUT, a.seed)
    steps = a.warmup + a.steps
    ref_params, ref_grad = _reference(base, x, y, steps, a.lr)
    numels = [p.numel() for p in base.parameters()]  # flat_params' order
    bound = DP.train_tolerance(a.batch, a.width)
    result = {
        "world_size": world,
        "backend": dist.get_backend(),
        "device": str(device),
        "params": sum(p.numel() for p in base.parameters()),
        "batch": a.batch,
        "width": a.width,
        "param_numels": numels,
        "local_batch": len(shard),
        "steps": a.steps,
        "warmup": a.warmup,
        "lr": a.lr,
        "modes": {},
    }
    first_grads = {}
    for mode in a.modes.split(","):
        model = copy.deepcopy(base).to(device)
        inputs, targets = x_local, y_local
        if mode == "ddp":
            net = nn.parallel.DistributedDataParallel(
                model, device_ids=[local_rank] if device.type == "cuda" else None
            )
        elif mode == "avg_grad":
            net = model
        elif mode == "dp":
            assert world == 1 and device.type == "cuda", "DataParallel: one process driving every GPU"
            net = nn.DataParallel(model)
            inputs, targets = x.to(device), y.to(device)
        else:
            raise ValueError(f"unknown mode {mode!r}")
        opt = torch.optim.SGD(net.parameters(), lr=a.lr)
        times = []
        for step in range(steps):
            _sync(device)
            t0 = time.perf_counter()
            opt.zero_grad()
            nn.functional.mse_loss(net(inputs), targets).backward()
            if mode == "avg_grad":
                DP.average_gradients(model)
            if step == 0:  # a warm-up step: the copy is not timed
                first_grads[mode] = DP.flat_grads(model)
            opt.step()
            _sync(device)
            if step >= a.warmup:
                times.append(time.perf_counter() - t0)
        final = DP.flat_params(model)
        params_err = max(DP.tensor_errors(final, ref_params, numels))
        grad_err = max(DP.tensor_errors(first_grads[mode], ref_grad, numels))
        result["modes"][mode] = {
            "step_s": times,
            "params_rel_err": params_err,
            "params_within_tol": params_err <= bound,
            "grad_rel_err": grad_err,
            "grad_within_tol": grad_err <= bound,
            "params_sha1": _digest(final),
            "tol": {"norm": bound},
        }
        if rank == 0:
            torch.save(final, Path(a.out) / f"params-{mode}.pt")
    if "ddp" in first_grads and "avg_grad" in first_grads:
        result["avg_grad_vs_ddp"] = {
            "grad_rel_diff": max(DP.tensor_errors(first_grads["avg_grad"], first_grads["ddp"], numels)),
            "tol": bound,
            "bitwise_equal": torch.equal(first_grads["ddp"], first_grads["avg_grad"]),
        }
    _write(a.out, "train", rank, result)
    dist.destroy_process_group()


# ---- equivalence: manual averaging and DDP against float64 full-batch truth --------------------


def task_equivalence(a) -> None:
    """The averaged gradient after one backward and DDP's parameters after `steps` SGD steps, each
    rank on its shard in fp32, against one process's full-batch training in float64 from the same
    fp32 weights (widened exactly). The bound and the verdict are `cases.parallel`'s (`dp_vs_ddp`,
    `average_gradient`)."""
    rank, world, _, device = _init(a.device)
    assert a.batch % world == 0, "equal shards: the mean of the shards' means is the full-batch mean"
    x, y = DP.make_batch(a.batch, a.dim, a.dim, a.seed)
    shard = list(
        torch.utils.data.DistributedSampler(range(a.batch), num_replicas=world, rank=rank, shuffle=False)
    )
    x_local, y_local = x[shard].to(device), y[shard].to(device)
    base = DP.make_mlp(a.dim, a.width, a.dim, a.seed)
    numels = [p.numel() for p in base.parameters()]

    truth = copy.deepcopy(base).double()
    nn.functional.mse_loss(truth(x.double()), y.double()).backward()
    truth_grad = DP.flat_grads(truth)
    truth.zero_grad()
    losses = [nn.functional.mse_loss(truth(x.double()), y.double()).item()]
    DP.train_full_batch(truth, x.double(), y.double(), a.steps, a.lr)
    losses.append(nn.functional.mse_loss(truth(x.double()), y.double()).item())
    truth_params = DP.flat_params(truth)

    model = copy.deepcopy(base).to(device)
    nn.functional.mse_loss(model(x_local), y_local).backward()
    local = DP.flat_grads(model)
    DP.average_gradients(model)
    averaged = DP.flat_grads(model)

    single = DP.train_full_batch(copy.deepcopy(base), x, y, a.steps, a.lr)  # fp32, one process
    ddp_model = copy.deepcopy(base).to(device)
    ddp = nn.parallel.DistributedDataParallel(
        ddp_model, device_ids=[device.index] if device.type == "cuda" else None
    )
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr)
    for _ in range(a.steps):
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x_local), y_local).backward()
        opt.step()
    final = DP.flat_params(ddp_model)

    _write(
        a.out,
        "equivalence",
        rank,
        {
            "world_size": world,
            "backend": dist.get_backend(),
            "batch": a.batch,
            "width": a.width,
            "d": a.dim,
            "steps": a.steps,
            "lr": a.lr,
            "dtype": str(averaged.dtype),
            "losses_float64": losses,
            "avg_grad_rel_err": DP.tensor_errors(averaged, truth_grad, numels),
            "summed_rel_err": DP.tensor_errors(averaged * world, truth_grad, numels),
            "local_rel_err": DP.tensor_errors(local, truth_grad, numels),
            "ddp_params_rel_err": DP.tensor_errors(final, truth_params, numels),
            "single_params_rel_err": DP.tensor_errors(DP.flat_params(single), truth_params, numels),
            "ddp_params_sha1": _digest(final),
        },
    )
    dist.destroy_process_group()


# ---- allreduce ------------------------------------------------------------------------------------


def task_allreduce(a) -> None:
    rank, world, _, device = _init(a.device)
    rows = []
    for nbytes in (int(s) for s in a.sizes.split(",")):
        numel = nbytes // 4
        src = collectives.rank_tensor(numel, rank, a.seed).to(device)
        check = nbytes <= a.check_limit  # the float64 truth of p ranks' tensors costs 8·p·S
        truth, bound = collectives.allreduce_bound(numel, world, a.seed) if check else (None, None)
        reps = a.reps if nbytes <= 1 << 20 else max(3, a.reps // 2)
        for name in a.algorithms.split(","):
            fn = collectives.ALLREDUCE[name]
            times, sent, error, within = [], 0, None, None
            for rep in range(reps + 1):  # rep 0 warms up the connections and is the checked one
                t = src.clone()
                dist.barrier()
                _sync(device)
                t0 = time.perf_counter()
                sent = fn(t)
                _sync(device)
                dt = time.perf_counter() - t0
                if rep == 0 and check:
                    err = (t.double().cpu() - truth).abs()
                    error, within = err.max().item(), bool((err <= bound).all())
                elif rep > 0:
                    times.append(dt)
            rows.append(
                {
                    "algorithm": name,
                    "bytes": nbytes,
                    "times_s": times,
                    "bytes_sent": sent,
                    "max_abs_err": error,
                    "within_bound": within,
                }
            )
        del src, truth, bound
    _write(
        a.out,
        "allreduce",
        rank,
        {"world_size": world, "backend": dist.get_backend(), "device": str(device), "rows": rows},
    )
    dist.destroy_process_group()


# ---- setup ----------------------------------------------------------------------------------------


def _gather(t: torch.Tensor, world: int) -> list[torch.Tensor]:
    out = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(out, t)
    return out


def setup_facts(rank: int, world: int, local_rank: int, device: torch.device, out: str, how: str) -> dict:
    """The notes' set-up recipe, observed: seeds, DDP's initial broadcast, sub-groups, rank-0 save."""
    facts = {
        "how": how,
        "world_size": world,
        "backend": dist.get_backend(),
        "initialized": dist.is_initialized(),
    }
    torch.manual_seed(42)  # the notes' setup(): same seed on every rank → same initial weights
    same = nn.Linear(32, 8).to(device)
    gathered = _gather(torch.cat([p.detach().reshape(-1) for p in same.parameters()]), world)
    facts["seeded_init_identical"] = all(torch.equal(g, gathered[0]) for g in gathered)
    torch.manual_seed(1000 + rank)  # no common seed: ranks differ until DDP broadcasts rank 0's
    model = nn.Linear(32, 8).to(device)
    before = _gather(torch.cat([p.detach().reshape(-1) for p in model.parameters()]), world)
    facts["unseeded_init_identical"] = all(torch.equal(g, before[0]) for g in before)
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[local_rank] if device.type == "cuda" else None
    )
    after = _gather(torch.cat([p.detach().reshape(-1) for p in ddp.module.parameters()]), world)
    facts["after_ddp_identical"] = all(torch.equal(g, after[0]) for g in after)
    facts["after_ddp_equals_rank0"] = torch.equal(after[rank], before[0])

    # new_group: every rank must call new_group for every group, in the same order.
    parities = [k for k in (0, 1) if any(r % 2 == k for r in range(world))]
    groups = {k: dist.new_group(ranks=[r for r in range(world) if r % 2 == k]) for k in parities}
    t = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(t, group=groups[rank % 2])
    facts["subgroup_sum"] = t.item()
    facts["subgroup_expected"] = float(sum(r + 1 for r in range(world) if r % 2 == rank % 2))

    # Save once from rank 0, as the notes say, the *unwrapped* module's state_dict.
    path = Path(out) / f"checkpoint-{how.split()[0].replace('.', '_')}.pt"
    if rank == 0:
        torch.save(ddp.module.state_dict(), path)
    dist.barrier()  # nobody reads before rank 0 has written
    plain = nn.Linear(32, 8)
    plain.load_state_dict(torch.load(path, map_location="cpu"))
    facts["reload_equal"] = all(
        torch.equal(a.cpu(), b) for a, b in zip(ddp.module.parameters(), plain.parameters())
    )
    wrapped_keys = list(ddp.state_dict())
    facts["ddp_state_dict_keys"] = wrapped_keys
    try:
        nn.Linear(32, 8).load_state_dict({k: v.cpu() for k, v in ddp.state_dict().items()})
        facts["wrapped_state_dict_loads"] = True
    except RuntimeError as exc:
        facts["wrapped_state_dict_loads"] = False
        facts["wrapped_state_dict_error"] = str(exc).splitlines()[0]
    dist.barrier()
    dist.destroy_process_group()
    facts["initialized_after_destroy"] = dist.is_initialized()
    return facts


def _before_init() -> str:
    """The notes: init_process_group before any other function of the package. What a collective's
    helper does before it: its error, or "" where it ran."""
    try:
        dist.get_world_size()
    except (RuntimeError, ValueError) as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
    return ""


def task_setup(a) -> None:
    before = _before_init()
    rank, world, local_rank, device = _init(a.device)
    facts = setup_facts(rank, world, local_rank, device, a.out, "torchrun env://")
    facts["before_init_error"] = before
    facts["env"] = {
        k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    }
    _write(a.out, "setup", rank, facts)


def _spawn_entry(rank: int, world: int, init_method: str, out: str, kind: str) -> None:
    """mp.spawn's target: the rank comes first, then `args` unpacked."""
    r, w, local_rank, device = _init(kind, init_method=init_method, rank=rank, world=world)
    facts = setup_facts(r, w, local_rank, device, out, "mp.spawn tcp://")
    _write(out, "spawn", rank, facts)


def notes_main(rank, world_size):
    """004's `main(rank, world_size)`, reduced to checking what mp.spawn handed it (for
    `cases.dist.setup.check_spawn_args`)."""
    assert isinstance(world_size, int) and 0 <= rank < world_size, (rank, world_size)


@contextlib.contextmanager
def temp_files_in(folder: Path):
    """`tempfile`'s folder is `folder` inside the block (for this process only): mp.spawn leaves a
    raising rank's error file (a temporary file it never removes) behind."""
    before = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = before


def task_spawn(a) -> None:
    import torch.multiprocessing as mp

    from cases._launch import dist_worker as me  # pickled by its importable name, not __main__

    init_method = f"tcp://127.0.0.1:{launch.free_port()}"
    mp.spawn(me._spawn_entry, args=(a.world, init_method, a.out, a.device), nprocs=a.world, join=True)


# ---- faults ---------------------------------------------------------------------------------------


def task_fault(a) -> None:
    rank, world, _, device = _init(a.device)
    _write(a.out, "fault_started", rank, {"pid": os.getpid()})
    if rank == a.bad_rank and a.kind != "none":
        if a.kind == "raise":
            raise RuntimeError(f"injected fault on rank {rank}")
        time.sleep(3600)  # a rank that never reaches the collective
    t = torch.ones(1, device=device)
    dist.all_reduce(t)  # the healthy ranks wait here for the bad one
    _write(a.out, "fault", rank, {"sum": t.item()})
    dist.destroy_process_group()


# ---- entry point ----------------------------------------------------------------------------------


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cases._launch.dist_worker")
    sub = parser.add_subparsers(dest="task", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", required=True, help="directory for the per-rank JSON files")
    common.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    common.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("train", parents=[common])
    p.add_argument("--modes", default="ddp,avg_grad")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.1)
    p = sub.add_parser("allreduce", parents=[common])
    p.add_argument("--sizes", default=",".join(str(1 << k) for k in (10, 14, 18, 22, 26)))
    p.add_argument("--algorithms", default=",".join(collectives.ALLREDUCE))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--check-limit", type=int, default=16 << 20)
    p = sub.add_parser("equivalence", parents=[common])
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.1)
    sub.add_parser("setup", parents=[common])
    p = sub.add_parser("spawn", parents=[common])
    p.add_argument("--world", type=int, default=2)
    p = sub.add_parser("fault", parents=[common])
    p.add_argument("--kind", choices=("none", "raise", "hang"), required=True)
    p.add_argument("--bad-rank", type=int, default=1)
    return parser.parse_args(argv)


TASKS = {
    "train": task_train,
    "allreduce": task_allreduce,
    "equivalence": task_equivalence,
    "setup": task_setup,
    "spawn": task_spawn,
    "fault": task_fault,
}


def main(argv: list[str] | None = None) -> None:
    from torch.distributed.elastic.multiprocessing.errors import record

    a = parse(sys.argv[1:] if argv is None else argv)
    record(TASKS[a.task])(a)  # a failing rank's traceback reaches torchrun's error summary
    # The answer is written and the process group destroyed: leave without the interpreter's
    # teardown. In it a rank aborted now and then ("terminate called without an active
    # exception", SIGABRT) after writing its answer: 2 of 40 `equivalence` launches, and one check
    # of one whole-suite run in eight, on the 2-core Xeon (torch 2.13.0+cpu, gloo); torchrun then
    # failed the launch, and its check could not judge. A task that raises still exits through it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    from harness.run.launch import die_with_parent

    die_with_parent()  # a rank dies with torchrun, even when torchrun is killed outright
    main()
