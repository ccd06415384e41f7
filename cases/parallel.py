"""Data parallelism: DataParallel vs DDP, all-reduce algorithms, manual data parallel and manual
gradient averaging (notes 000/001 "Multi-GPU", 002 "多GPU训练", 004 "DISTRIBUTED DATA PARALLEL").

What runs where: the multi-process parts (DDP training, the all-reduce algorithms over a process
group) run in `cases.dist_worker` under torchrun, launched by `suite/test_distributed.py`; this
module holds the pure pieces they share (the model, the data, the algorithms, the α–β cost model)
and the `Case` declarations, whose in-process checks the generic tests run.

Cost comments count bytes *sent by one rank* for a message of S bytes over p ranks.
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from cases._lib import isolated as _isolated
from cases._lib.inputs import generator
from cases._lib.precision import ieee_fp32
from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Tol, Verdict, library, naive
from harness import premises
from harness.rules import FromFindings

FP32, FP64 = torch.float32, torch.float64
U32 = 2.0**-24  # unit roundoff of fp32


# ---- the model and data every data-parallel variant trains ---------------------------------------


def make_mlp(d_in: int, width: int, d_out: int, seed: int) -> nn.Sequential:
    """A plain MLP: 1.6 M parameters at width 1024 (d_in = d_out = 256), the size of a small
    real layer stack; its gradient is one 6.4 MB all-reduce per step."""
    g = torch.Generator().manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(d_in, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, d_out)
    )
    with torch.no_grad():
        for p in model.parameters():  # seeded explicitly: identical on every rank by construction
            p.copy_(torch.randn(p.shape, generator=g) / (p.shape[-1] ** 0.5))
    return model


def make_batch(n: int, d_in: int, d_out: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed + 1)
    return torch.randn(n, d_in, generator=g), torch.randn(n, d_out, generator=g)


def flat_params(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).cpu() for p in model.parameters()])


def flat_grads(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.detach().reshape(-1).cpu() for p in model.parameters()])


def train_full_batch(model: nn.Module, x, y, steps: int, lr: float) -> nn.Module:
    """The single-device truth: `steps` SGD steps on the whole batch with the mean-squared loss."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


# Parameters after k SGD steps, and the first gradient, against full-batch fp32 training. A gradient
# entry of a weight sums `batch` per-sample terms after backpropagation through sums of `width`
# terms: fp32 in another order (shards, all-reduce, another device's GEMMs) is off by ~u·√K per sum,
# u·(√batch + √width) relative to the update, and a contracting run's updates never add up to more
# than the parameter (lr 0.1 on this MLP: the loss falls every step), plus 2u for the parameter's
# own storage. Norm-wise per tensor, as manual_dp's bound: a ReLU pre-activation within rounding of
# zero lands on either side and moves one sample's whole term in a few entries (a kink, not a
# rounding), so an element-wise bound failed at full size (width 4096, batch 1024, 21 steps, two
# shards: 9e-7 over rtol 1e-5 + atol 1e-6) where the norm-wise errors were 3-17u against this
# bound's 98u. A gradient summed instead of averaged is off by over 12 000u in every tensor.
def train_tolerance(batch: int, width: int) -> float:
    return U32 * (2 + math.sqrt(batch) + math.sqrt(width))


def tensor_errors(got: torch.Tensor, truth: torch.Tensor, numels) -> list[float]:
    """||got − truth|| / ||truth|| of each parameter tensor in two flat_params vectors."""
    pairs = zip(got.double().split(list(numels)), truth.double().split(list(numels)))
    return [((g - t).norm() / t.norm().clamp_min(1e-300)).item() for g, t in pairs]


# ---- all-reduce algorithms over a process group (run inside the worker) -------------------------


def allreduce_naive(t: torch.Tensor) -> int:
    """The notes' d2l `allreduce` across processes: everyone sends to rank 0, which adds them
    one by one and sends the sum back to each rank in turn.

    Rank 0 receives (p−1)·S and sends (p−1)·S through its one link; other ranks send S.
    """
    rank, p = dist.get_rank(), dist.get_world_size()
    nbytes = t.numel() * t.element_size()
    if rank == 0:
        buf = torch.empty_like(t)
        for src in range(1, p):
            dist.recv(buf, src)
            t.add_(buf)
        for dst in range(1, p):
            dist.send(t, dst)
        return (p - 1) * nbytes
    dist.send(t, 0)
    dist.recv(t, 0)
    return nbytes


def allreduce_master(t: torch.Tensor) -> int:
    """Master gather + broadcast with collectives (the "straightforward" algorithm in 004).
    Nominal traffic as for `allreduce_naive` (the backend may broadcast along a tree)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    nbytes = t.numel() * t.element_size()
    gathered = [torch.empty_like(t) for _ in range(p)] if rank == 0 else None
    dist.gather(t, gathered, dst=0)
    if rank == 0:
        total = gathered[0].clone()
        for other in gathered[1:]:
            total.add_(other)
        t.copy_(total)
    dist.broadcast(t, src=0)
    return (p - 1) * nbytes if rank == 0 else nbytes


def allreduce_ring(t: torch.Tensor) -> int:
    """Ring all-reduce written with point-to-point send/recv: reduce-scatter, then all-gather.

    The tensor is cut into p chunks of S/p. In each of p−1 reduce-scatter steps a rank sends one
    chunk to its right neighbour and adds the chunk from its left one; after them rank r holds
    the full sum of chunk r+1. p−1 all-gather steps pass the finished chunks round the ring.
    Every rank sends 2·(p−1)·S/p bytes — independent of p for large p, unlike the master's (p−1)·S.
    """
    rank, p = dist.get_rank(), dist.get_world_size()
    if p == 1:
        return 0
    assert t.numel() >= p, "the ring needs at least one element per rank"
    chunks = list(t.view(-1).tensor_split(p))
    right, left = (rank + 1) % p, (rank - 1) % p
    buf = torch.empty_like(chunks[0])
    sent = 0
    for s in range(p - 1):
        out, into = chunks[(rank - s) % p], chunks[(rank - s - 1) % p]
        incoming = buf[: into.numel()]
        req = dist.isend(out, right)
        dist.recv(incoming, left)
        req.wait()
        into.add_(incoming)
        sent += out.numel() * out.element_size()
    for s in range(p - 1):
        out, into = chunks[(rank + 1 - s) % p], chunks[(rank - s) % p]
        req = dist.isend(out, right)
        dist.recv(into, left)
        req.wait()
        sent += out.numel() * out.element_size()
    return sent


def allreduce_library(t: torch.Tensor) -> int:
    """`dist.all_reduce` (gloo: ring/halving-doubling by size; NCCL: ring or tree). Bytes: the
    ring's 2(p−1)/p·S as nccl-tests assumes for bus bandwidth; the backend does not report them."""
    dist.all_reduce(t)
    p = dist.get_world_size()
    return int(2 * (p - 1) / p * t.numel() * t.element_size())


ALLREDUCE = {
    "naive": allreduce_naive,
    "master": allreduce_master,
    "ring": allreduce_ring,
    "all_reduce": allreduce_library,
}
ALLREDUCE_ROLES = {"naive": "naive", "master": "naive", "ring": "optimized", "all_reduce": "library"}


def rank_tensor(numel: int, rank: int, seed: int) -> torch.Tensor:
    """Rank r's contribution: every rank can rebuild every other rank's, so each can check the sum."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return torch.randn(numel, generator=g)


def allreduce_bound(numel: int, p: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The float64 sum of all ranks' tensors and the rigorous fp32 error bound for any summation
    order: |Σ̂ − Σ| ≤ γ_{p−1}·Σ|x_i| ≤ p·u·Σ|x_i| (and 0 for p = 1)."""
    parts = torch.stack([rank_tensor(numel, r, seed).double() for r in range(p)])
    return parts.sum(0), p * U32 * parts.abs().sum(0)


# ---- the α–β cost model ----------------------------------------------------------------------------


def model_terms(algorithm: str, p: int, nbytes: float) -> tuple[float, float]:
    """(messages, bytes) on the critical path of one all-reduce of `nbytes` over `p` ranks.

    ring: 2(p−1) steps of S/p each  → 2(p−1)·α + 2(p−1)/p·S·β
    master (naive, master): rank 0 receives p−1 messages of S, then sends p−1, through its one
    link, one after the other → 2(p−1)·α + 2(p−1)·S·β.
    `all_reduce` is modelled as a ring (what gloo and NCCL use for large messages).
    """
    if algorithm in ("ring", "all_reduce"):
        return 2 * (p - 1), 2 * (p - 1) / p * nbytes
    return 2 * (p - 1), 2 * (p - 1) * nbytes


def model_time(algorithm: str, p: int, nbytes: float, alpha: float, beta: float) -> float:
    msgs, crit = model_terms(algorithm, p, nbytes)
    return msgs * alpha + crit * beta


def fit_alpha_beta(points) -> tuple[float, float]:
    """Least-squares α (s per message) and β (s per byte) from (algorithm, p, bytes, seconds),
    on relative error so that 1 KiB and 64 MiB points weigh alike; both kept ≥ 0."""
    from scipy.optimize import nnls

    rows, rhs = [], []
    for algorithm, p, nbytes, seconds in points:
        msgs, crit = model_terms(algorithm, p, nbytes)
        rows.append([msgs / seconds, crit / seconds])
        rhs.append(1.0)
    (alpha, beta), _ = nnls(np.asarray(rows), np.asarray(rhs))
    return float(alpha), float(beta)


def bus_bandwidth(nbytes: float, seconds: float, p: int) -> tuple[float, float]:
    """(algbw, busbw) in bytes/s as nccl-tests defines them for all-reduce: algbw = S/t,
    busbw = algbw·2(p−1)/p — the per-link rate a ring needs, comparable across p."""
    algbw = nbytes / seconds
    return algbw, algbw * 2 * (p - 1) / p


# ---- manual gradient averaging (the notes' average_gradient, corrected) --------------------------


def average_gradients(model: nn.Module) -> None:
    """The notes' `average_gradient` with `dist.all_reduce` in place of the removed
    `all_reduce_multigpu`: one blocking all-reduce per parameter after backward (no bucketing,
    no overlap with backward — what DDP adds)."""
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
        param.grad /= size


def notes_average_gradient(model: nn.Module) -> None:
    """Verbatim from notes 000/001 "Multi-GPU"."""
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce_multigpu([param.grad.data], op=dist.ReduceOp.SUM)
        param.grad.data /= size


# ---- manual data parallel in one process (d2l, notes 002) ----------------------------------------


def d2l_allreduce(data: list[torch.Tensor]) -> None:
    """Verbatim from notes 002: sum into data[0], copy back. Device 0 receives (k−1)·S and sends
    (k−1)·S: the master pattern, through one device."""
    for i in range(1, len(data)):
        data[0][:] += data[i].to(data[0].device)
    for i in range(1, len(data)):
        data[i][:] = data[0].to(data[i].device)


def replica_devices(device: torch.device, replicas: int) -> list[torch.device]:
    """One device per replica: distinct GPUs when there are enough, otherwise replicas share the
    device (on CPU, or one GPU: the cost of the machinery without any parallel hardware)."""
    if device.type == "cuda":
        count = torch.cuda.device_count()
        return [torch.device("cuda", i % count) for i in range(replicas)]
    return [device] * replicas


def _scatter(t: torch.Tensor, devices: list[torch.device]) -> list[torch.Tensor]:
    distinct_gpus = all(d.type == "cuda" for d in devices) and len(set(devices)) == len(devices)
    if distinct_gpus:
        return list(nn.parallel.scatter(t, devices))  # the notes' call; CUDA only
    return [c.to(d) for c, d in zip(t.chunk(len(devices)), devices)]


def _mlp_forward(params, x):
    w1, b1, w2, b2 = params
    return torch.relu(x @ w1 + b1) @ w2 + b2


def make_mlp_problem(size, dtype, device, seed):
    g = generator(device, seed)
    d, h, n = size["d"], size["hidden"], size["batch"]

    def randn(*shape):
        return torch.randn(shape, generator=g, device=device)

    params = [randn(d, h) / d**0.5, 0.1 * randn(h), randn(h, d) / h**0.5, 0.1 * randn(d)]
    x, y = randn(n, d), randn(n, d)
    # replicas travel as a 0-d tensor so that the generic harness passes it through unchanged
    replicas = torch.tensor(size["replicas"])
    return (*(t.to(dtype) for t in (*params, x, y)), replicas)


# The step size must make training a contraction at every width, or the comparison measures chaos:
# the summed squared loss (per sample) curves most along w2 in the direction of the mean ReLU
# activation, λ ≈ 2·hidden·E[relu(z)]² = hidden/π (power iteration: 0.33–0.36·hidden for hidden
# 128–2048), and SGD contracts there only while lr·λ < 2. A fixed lr = 0.05 sat at that edge at
# hidden 128 and 34× past it at 4096, where 3 steps took the loss from 1.6e3 to 1e28 and the fp32
# runs ended 5–30 % away from float64's (an H100: 7086 against 10286) — rounding amplified by a
# divergence, not a fault of either side. lr = 2/hidden keeps lr·λ ≈ 0.7 at every size.
MANUAL_STEPS, MANUAL_LR_TIMES_HIDDEN = 3, 2.0


def manual_lr(w1) -> float:
    return MANUAL_LR_TIMES_HIDDEN / w1.shape[1]


def single_device_train(w1, b1, w2, b2, x, y, replicas, steps=MANUAL_STEPS):
    """Full batch on one device: sum loss, SGD with lr/batch (d2l's `sgd(params, lr, batch)`)."""
    lr = manual_lr(w1)
    params = [p.clone().requires_grad_() for p in (w1, b1, w2, b2)]
    for _ in range(steps):
        loss = ((_mlp_forward(params, x) - y) ** 2).sum()
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g / x.shape[0]
    return tuple(p.detach() for p in params)


def manual_dp_train(w1, b1, w2, b2, x, y, replicas, steps=MANUAL_STEPS):
    """d2l's `train_batch`: copy params to each device, scatter the batch, backward per device,
    d2l `allreduce` of each gradient, SGD on every replica with the full batch size."""
    lr = manual_lr(w1)
    devices = replica_devices(x.device, int(replicas))
    device_params = [[p.to(d, copy=True).requires_grad_() for p in (w1, b1, w2, b2)] for d in devices]
    for _ in range(steps):
        xs, ys = _scatter(x, devices), _scatter(y, devices)
        for params, xb, yb in zip(device_params, xs, ys):
            ((_mlp_forward(params, xb) - yb) ** 2).sum().backward()
        with torch.no_grad():
            for i in range(len(device_params[0])):
                d2l_allreduce([device_params[c][i].grad for c in range(len(devices))])
            for params in device_params:
                for p in params:
                    p -= lr * p.grad / x.shape[0]
                    p.grad.zero_()
    replica0 = tuple(p.detach() for p in device_params[0])
    for other in device_params[1:]:  # every replica must hold the same parameters
        assert all(torch.equal(p.detach().to(q.device), q) for p, q in zip(other, replica0))
    return replica0


def manual_dp_oracle(w1, b1, w2, b2, x, y, replicas):
    args = [t.detach().to("cpu", FP64) for t in (w1, b1, w2, b2, x, y)]
    return single_device_train(*args, replicas)


# ---- checks run in-process ---------------------------------------------------------------------


def check_all_reduce_multigpu_removed(device):
    """The notes' `average_gradient` calls `dist.all_reduce_multigpu`: run it as written, in a
    one-process gloo group (an in-memory store: no port, no other process)."""
    model = make_mlp(8, 16, 4, seed=0)
    x, y = make_batch(4, 8, 4, seed=0)
    nn.functional.mse_loss(model(x), y).backward()
    exists = hasattr(dist, "all_reduce_multigpu")
    own_group = not dist.is_initialized()
    if own_group:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        notes_average_gradient(model)
        error = None
    except (AttributeError, RuntimeError, ValueError) as exc:
        error = exc
    finally:
        if own_group:
            dist.destroy_process_group()
    return judge_all_reduce_multigpu(exists, repr(error) if error is not None else "")


def judge_all_reduce_multigpu(exists: bool, error: str) -> Finding:
    """The API the notes call is their matter: gone from torch, a removed-API erratum. The
    technique (all_reduce after backward, then ÷ world size) is judged by the launched run
    against DDP's gradients (average_gradient_vs_ddp)."""
    if exists and not error:
        return Finding(None, f"torch {torch.__version__}: the notes' all_reduce_multigpu call runs")
    return Finding(
        None,
        f"torch {torch.__version__}: the notes' average_gradient gives {error}",
        (
            Erratum(
                ErratumKind.REMOVED_API if not exists else ErratumKind.DEPRECATED_API,
                "dist.all_reduce_multigpu([param.grad.data], op=dist.ReduceOp.SUM)",
                f"{error}; dist.all_reduce on each gradient (one tensor per process) replaces it",
            ),
        ),
    )


def check_d2l_allreduce(device):
    """The notes' d2l `allreduce` over k replicas equals the float64 sum, on every replica."""
    g = torch.Generator().manual_seed(3)
    devices = replica_devices(device, 4)
    data = [torch.randn(1000, generator=g).to(d) for d in devices]
    bound = 4 * U32 * torch.stack([t.double().cpu().abs() for t in data]).sum(0)
    truth = torch.stack([t.double().cpu() for t in data]).sum(0)
    d2l_allreduce(data)
    errors = [(t.double().cpu() - truth).abs() for t in data]
    assert all((e <= bound).all() for e in errors), f"max error {max(e.max().item() for e in errors):.3g}"
    assert all(torch.equal(data[0].cpu(), t.cpu()) for t in data), "replicas differ after the copy back"
    return Finding(
        Verdict.HOLDS,
        f"4 replicas on {sorted({str(d) for d in devices})}: sum within "
        f"p·u·Σ|x| of float64 (max err {max(e.max().item() for e in errors):.2g}), all replicas equal",
    )


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
        outcome = _isolated.run("cases.parallel:dataparallel_probe", "cpu", env={"CUDA_VISIBLE_DEVICES": ""})
        assert outcome.error is None, f"the probe raised in the fresh process: {outcome.error}"
        where = f"a fresh process with CUDA_VISIBLE_DEVICES='' ({gpus} GPU(s) hidden)"
        return judge_dataparallel(outcome.value, where)
    return judge_dataparallel(dataparallel_probe(device.type), "this process")


# ---- launched on CPU: manual averaging and DDP against float64 full-batch training ---------------


# Norm-wise relative error of an fp32 gradient (or of the parameters after k steps) against float64.
# Each rounding is at most u (the dtype's unit roundoff); a sum of K terms gathers them like a random
# walk, ~u·√K (Higham & Mary's probabilistic bound; the worst case K·u is never approached by
# independent roundings over many entries, and a norm averages over them). A gradient entry of the
# 3-layer MLP sits at the end of these sums: forward d, width, width; backward d (through the last
# layer) and width (through the middle one); the weight gradient's reduction over the batch; the
# all-reduce over p ranks (÷p is exact for p a power of 2). Plus 2u for the inputs' and the result's
# own rounding: u·(2 + 2√d + 3√width + √batch + √p). After k
# SGD steps the parameters carry the updates' error, and in a contracting run (the float64 loss
# falls: checked) the updates never add up to more than the parameter: the same bound. Measured on
# 2 gloo ranks at d=32, width=64, batch=32: 2.6u for the averaged gradient, 0.8u for DDP's
# parameters, against the bound's 44u; a gradient summed instead of averaged is off by 1 (p−1).
def reduction_tolerance(u: float, batch: int, width: int, d: int, world: int) -> float:
    return u * (2 + 2 * math.sqrt(d) + 3 * math.sqrt(width) + math.sqrt(batch) + math.sqrt(world))


EQUIVALENCE_SIZE = {"dim": 32, "width": 64, "batch": 32, "steps": 3, "lr": 0.1}
EQUIVALENCE_WORLD = 2


@functools.lru_cache(maxsize=1)
def equivalence_ranks() -> tuple[dict, ...]:
    """`cases.dist_worker equivalence` under torchrun, 2 gloo ranks on CPU (a few seconds, mostly
    process start-up); launched once and read by both checks that need it."""
    import shutil
    import tempfile
    from pathlib import Path

    from harness import launch

    out = Path(tempfile.mkdtemp(prefix="equivalence-"))
    try:
        args = ["equivalence", "--device", "cpu"]
        args += [a for k, v in EQUIVALENCE_SIZE.items() for a in (f"--{k}", str(v))]
        run = launch.torchrun(
            "cases.dist_worker", args, nproc=EQUIVALENCE_WORLD, out_dir=out, timeout_s=120.0
        )
        assert run.ok, f"equivalence launch: {run.describe()}"
        rows = tuple(run.results("equivalence"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert [r["rank"] for r in rows] == list(range(EQUIVALENCE_WORLD)), f"rank files: {len(rows)}"
    return rows


def _equivalence_bound(rows) -> float:
    r = rows[0]
    u = torch.finfo(getattr(torch, r["dtype"].removeprefix("torch."))).eps / 2
    return reduction_tolerance(u, r["batch"], r["width"], r["d"], r["world_size"])


def check_average_gradient_full_batch(device):
    """The notes' average_gradient with dist.all_reduce (one tensor per process), after one
    backward on each rank's shard, against the float64 full-batch gradient."""
    rows = equivalence_ranks()
    return judge_average_gradient(
        max(max(r["avg_grad_rel_err"]) for r in rows),
        min(min(r["summed_rel_err"]) for r in rows),
        min(min(r["local_rel_err"]) for r in rows),
        _equivalence_bound(rows),
        rows[0]["world_size"],
    )


def judge_average_gradient(error: float, summed: float, local: float, bound: float, world: int) -> Finding:
    """Holds where every rank's averaged gradient is within the fp32 bound of the float64
    full-batch gradient (largest error over ranks and parameter tensors)."""
    return Finding(
        Verdict.HOLDS if error <= bound else Verdict.FAILS,
        f"{world} gloo ranks: all_reduce(SUM) then ÷{world} after backward gives the full-batch gradient "
        f"within {error:.2g} of float64 norm-wise (bound {bound:.2g}); without the ÷ the sum is off by "
        f"≥ {summed:.2g}, a rank's own shard gradient by ≥ {local:.2g}",
    )


def check_ddp_full_batch(device):
    """DDP on 2 gloo ranks, each on its shard, after k SGD steps, against float64 full-batch training
    in one process from the same weights (the catalogue's check; DataParallel needs >= 2 GPUs)."""
    rows = equivalence_ranks()
    r = rows[0]
    return judge_ddp_full_batch(
        max(max(x["ddp_params_rel_err"]) for x in rows),
        max(r["single_params_rel_err"]),
        _equivalence_bound(rows),
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
    """Single-process multi-device DDP (torch <= 1.8) took a list of devices; a current DDP that
    rejects two of them has removed it: an erratum of the notes' line, deciding nothing (the
    launched runs judge DDP with one device per process)."""
    here = f"the notes' list(range(device_count())) is {notes_ids} here: " + (
        f"DDP raises {notes_error[:120]}" if notes_error else "DDP accepts it"
    )
    if not two_error:
        return Finding(None, f"torch {version}: DDP accepts device_ids=[0, 1]; " + here)
    return Finding(
        None,
        f"torch {version}: DDP(module, device_ids=[0, 1]) raises {two_error[:120]}; " + here,
        (
            Erratum(
                ErratumKind.REMOVED_API,
                "gpu_id = list(range(torch.cuda.device_count())); model = DDP(model,device_ids=gpu_id)",
                f"with 2 or more GPUs: {two_error[:160]} (one process per device, device_ids=[local_rank])",
            ),
        ),
    )


# ---- the cases -------------------------------------------------------------------------------------

DP_VS_DDP = Case(
    id="parallel.dp_vs_ddp",
    tier=1,
    claim="DistributedDataParallel (one process per device, bucketed all-reduce overlapped with "
    "backward) scales better than DataParallel (one process, threads, GIL); both train like one device.",
    source="002 Multiple GPUs, 004 GIL / DISTRIBUTED DATA PARALLEL",
    checks={
        "dataparallel_without_gpus": Check(check_dataparallel_without_gpus),
        "ddp_equals_full_batch": Check(check_ddp_full_batch, devices=("cpu",)),
        "ddp_device_ids": Check(check_ddp_device_ids, devices=("cpu",)),
    },
    requires=("distributed",),
    verdict=FromFindings(),
    # Timed in worker processes (suite/test_distributed.py), not as variants the suite could compile.
    uncompilable={
        "dp": "a training step across devices: DataParallel's threads and DDP's bucketed all-reduce "
        "are what is compared, not a tensor program torch.compile could fuse",
    },
)

ALLREDUCE_CASE = Case(
    id="parallel.allreduce",
    tier=2,
    claim="Ring all-reduce (reduce-scatter + all-gather) sends 2(p−1)/p·S per rank and scales; "
    "the master/naive version sends (p−1)·S through one link and does not.",
    source="002 allreduce, 004 Ring all-reduce",
    checks={"d2l_allreduce": Check(check_d2l_allreduce)},
    requires=("distributed",),
    verdict=FromFindings(),
    uncompilable={
        name: "point-to-point sends between processes: the communication pattern is what is "
        "compared, not a tensor program torch.compile could fuse"
        for name in ("naive", "master")
    },
)


def check_manual_dp_trains_like_one_device(device):
    """The claim itself: the hand-written data parallel's parameters after its steps, against the
    float64 training of one device on the full batch, norm-wise per parameter."""
    size = {"batch": 128, "hidden": 128, "d": 64, "replicas": 2}
    inputs = make_mlp_problem(size, torch.float32, device, seed=7)
    got, truth = manual_dp_train(*inputs), manual_dp_oracle(*inputs)
    errors = [((g.double() - t).norm() / t.norm()).item() for g, t in zip(got, truth)]
    # The case's own bound for its timed variant: u·(2 + √batch), norm-wise (see MANUAL_DP below).
    return judge_manual_dp(max(errors), U32 * (2 + size["batch"] ** 0.5), size["replicas"])


def judge_manual_dp(error: float, bound: float, replicas: int) -> Finding:
    """Holds where the replicas' training equals one device's within fp32's bound."""
    return Finding(
        Verdict.HOLDS if error <= bound else Verdict.FAILS,
        f"{replicas} replicas (scatter, per-replica backward, all-reduce, sgd) vs one device on the full "
        f"batch in float64: largest parameter error {error:.2g} norm-wise (bound {bound:.2g})",
    )


MANUAL_DP = Case(
    id="parallel.manual_dp",
    tier=2,
    claim="Hand-written data parallel (copy params, scatter the batch, per-device backward, "
    "allreduce, sgd) trains exactly like one device on the full batch.",
    source="002 拆分数据 / 实现多GPU训练",
    make_inputs=make_mlp_problem,
    variants={
        "manual_dp": naive(manual_dp_train),
        "single_device": library(single_device_train),
    },
    oracle=manual_dp_oracle,
    # Each parameter after 3 steps: its fp32 storage (u) plus the updates' error, ~u·√K relative
    # to the update for K = batch terms per gradient entry, and an update never exceeds the
    # parameter in a contracting run: u·(2 + √batch). Norm-wise, because a ReLU
    # pre-activation within rounding of zero lands on either side in fp32 and float64 and moves
    # one sample's whole term in a column of w1's update — a kink, not a rounding, local to a few
    # entries (at batch 4096 × hidden 4096: 5e-6 of max|w1| elementwise, 2u norm-wise). The
    # matmuls are cuBLAS's, IEEE fp32 by default (TF32, ~1e-3, would fail this bound).
    tolerance={FP32: lambda s: Tol(norm=U32 * (2 + s["batch"] ** 0.5))},
    sizes={
        "quick": [{"batch": 128, "hidden": 128, "d": 64, "replicas": 2}],
        "full": [{"batch": 4096, "hidden": 4096, "d": 1024, "replicas": r} for r in (1, 2, 4, 8)],
    },
    x="replicas",
    requires=("distributed",),
    checks={"trains_like_one_device": Check(check_manual_dp_trains_like_one_device)},
    # The claim is an equality with one device's training; the timing against it is context.
    verdict=FromFindings(),
)

AVERAGE_GRADIENT = Case(
    id="parallel.average_gradient",
    tier=2,
    claim="Averaging gradients by hand with all_reduce after backward gives DDP's gradients "
    "(the notes' version uses all_reduce_multigpu).",
    source="000/001 Multi-GPU",
    checks={
        "all_reduce_multigpu_removed": Check(check_all_reduce_multigpu_removed),
        "averages_to_full_batch": Check(check_average_gradient_full_batch, devices=("cpu",)),
    },
    requires=("distributed",),
    verdict=FromFindings(),
)


# ---- judging the launched runs ---------------------------------------------------------------------
# suite/test_distributed.py launches `cases.dist_worker` and hands its per-rank JSON (one dict per
# rank, in rank order) to these functions: they assert what must hold (AssertionError with the
# message) and compute the findings and benchmark rows. A row is (the `harness.record.BenchmarkInfo`
# fields, its extra keys, the per-step seconds pytest-benchmark replays).

# quick: the 1.6 M-parameter MLP (a 6.4 MB gradient all-reduce per step) for 5 steps, seconds on
# 2 CPU cores; full: width 4096 (18.9 M parameters, 75 MB per step) and a batch that fills a GPU.
TRAIN_SIZES = {
    "quick": {"width": 1024, "batch": 64, "steps": 5},
    "full": {"width": 4096, "batch": 1024, "steps": 20},
}
TRAIN_ROLES = {"dp": "naive", "ddp": "optimized", "avg_grad": "naive"}


def allreduce_message_sizes(profile: str, device: str) -> list[int]:
    """1 KiB (α-bound: the per-message latency dominates) to 64 MiB (β-bound), every 16× in the
    quick profile and every 4× in the full one, whose GPU sweep goes on to 256 MiB, where NVLink
    and PCIe reach their bandwidth. The α–β fit needs both ends."""
    top = 28 if profile == "full" and device == "cuda" else 26
    step = 2 if profile == "full" else 4
    return [1 << k for k in range(10, top + 1, step)]


def _median(values) -> float:
    import statistics

    return statistics.median(values)


def slowest_rank(rows: list[dict], pick) -> list[float]:
    """Per step, the slowest rank's time: a step is done when every rank is."""
    return [max(step) for step in zip(*(pick(r) for r in rows))]


def step_times(rows: list[dict], mode: str) -> list[float]:
    return slowest_rank(rows, lambda r: r["modes"][mode]["step_s"])


def check_training(rows: list[dict], mode: str) -> None:
    """Every rank trained `mode` to full-batch SGD's parameters, and all ranks to the same ones."""
    world = rows[0]["world_size"]
    assert len(rows) == world, f"{len(rows)} rank files for world size {world}"
    for r in rows:
        m = r["modes"][mode]
        assert m["params_within_tol"], (
            f"rank {r['rank']} {mode}: parameters differ from full-batch training by "
            f"{m['params_rel_err']:.3g} of a tensor's norm (bound {m['tol']})"
        )
        assert m["grad_within_tol"], (
            f"rank {r['rank']} {mode}: first gradient off by {m['grad_rel_err']:.3g} of a tensor's norm "
            f"(bound {m['tol']})"
        )
    digests = {r["modes"][mode]["params_sha1"] for r in rows}
    assert len(digests) == 1, f"{mode}: ranks ended with different parameters"


def train_row(rows: list[dict], mode: str, device: str) -> tuple[dict, dict, list[float]]:
    world, batch = rows[0]["world_size"], rows[0]["batch"]
    times = step_times(rows, mode)
    info = {
        "case": "parallel.dp_vs_ddp" if mode in ("ddp", "dp") else "parallel.average_gradient",
        "kind": "distributed",
        "variant": mode,
        "role": TRAIN_ROLES[mode],
        "size": {"world_size": world, "batch": batch},
        "size_label": f"w{world}-batch{batch}",
        "x": "world_size",
        "dtype": "float32",
        "device": device,
    }
    extra = {
        "backend": rows[0]["backend"],
        "params": rows[0]["params"],
        "step_s": times,
        "samples_per_s": batch / _median(times),
        "params_rel_err": max(r["modes"][mode]["params_rel_err"] for r in rows),
    }
    return info, extra, times


def ddp_scaling(rows: list[dict], times: list[float], base: list[dict]) -> tuple[dict, Finding]:
    """Strong scaling: the same global batch at world N as at 1 (`base`), so the ideal is
    T_N = T_1 / N and the efficiency T_1 / (N·T_N)."""
    world = rows[0]["world_size"]
    t1 = _median(step_times(base, "ddp"))
    efficiency = t1 / (world * _median(times))
    return {"t1_s": t1, "scaling_efficiency": efficiency}, Finding(
        None,
        f"DDP over {rows[0]['backend']}, {rows[0]['params'] / 1e6:.1f} M params, global batch "
        f"{rows[0]['batch']}: step {_median(times) * 1e3:.1f} ms at world {world} vs "
        f"{t1 * 1e3:.1f} ms at 1, scaling efficiency T1/(N·TN) = {efficiency:.2f}",
    )


def average_gradient_vs_ddp(rows: list[dict]) -> tuple[dict, Finding]:
    """Manual averaging's first gradient against DDP's on every rank, and the two step times."""
    bitwise = all(r["avg_grad_vs_ddp"]["bitwise_equal"] for r in rows)
    worst = max(rows, key=lambda r: r["avg_grad_vs_ddp"]["grad_rel_diff"] / r["avg_grad_vs_ddp"]["tol"])
    step = _median(step_times(rows, "avg_grad"))
    ddp = _median(step_times(rows, "ddp"))
    return {"bitwise_equal_to_ddp": bitwise}, judge_average_gradient_vs_ddp(
        worst["avg_grad_vs_ddp"]["grad_rel_diff"],
        worst["avg_grad_vs_ddp"]["tol"],
        bitwise,
        step,
        ddp,
        len(rows),
    )


def judge_average_gradient_vs_ddp(
    diff: float, bound: float, bitwise: bool, step_s: float, ddp_s: float, world: int
) -> Finding:
    """Holds where manual averaging's gradient is within the bound of DDP's on every rank (`diff`,
    `bound`: the rank nearest its bound); the step times are context."""
    same = "bitwise" if bitwise else f"within {diff:.2g} norm-wise (bound {bound:.2g})"
    if diff > bound:
        same = f"off by {diff:.3g} of a tensor's norm (bound {bound:.3g})"
    return Finding(
        Verdict.HOLDS if diff <= bound else Verdict.FAILS,
        f"all_reduce after backward vs DDP's gradients: {same}; step {step_s * 1e3:.1f} ms vs DDP's "
        f"{ddp_s * 1e3:.1f} ms at world {world}",
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
    """Holds where two simulated nodes train to one process's parameters within the bound."""
    return Finding(
        Verdict.HOLDS if error <= bound else Verdict.FAILS,
        f"2 simulated nodes × 1 rank (torchrun --nnodes=2, c10d rendezvous): parameters within "
        f"{error:.2g} of one process's (norm-wise, per tensor; bound {bound:.2g}) after {steps} steps; "
        f"wall {wall_s:.1f} s",
    )


def allreduce_table(ranks: list[dict]) -> tuple[list[dict], int]:
    """One row per (algorithm, message size): per repetition the slowest rank's time, and what
    each rank counted and checked."""
    p = ranks[0]["world_size"]
    table = []
    for i, row in enumerate(ranks[0]["rows"]):
        per_rank = [r["rows"][i] for r in ranks]
        times = [max(ts) for ts in zip(*(pr["times_s"] for pr in per_rank))]
        table.append(
            {
                **row,
                "p": p,
                "times_s": times,
                "median_s": _median(times),
                "bytes_sent_per_rank": [pr["bytes_sent"] for pr in per_rank],
                "checked": [pr["within_bound"] for pr in per_rank],
                "errors": [pr["max_abs_err"] for pr in per_rank],
            }
        )
    return table, p


def check_allreduce(table: list[dict], p: int) -> None:
    """Every checked sum within the fp32 bound p·u·Σ|x| (None: too big for the float64 truth), and
    the bytes each rank counted against the algorithms' traffic: the ring's 2(p−1)/p·S on every
    rank, the naive version's (p−1)·S through rank 0 and S from each other rank."""
    for row in table:
        assert all(c in (True, None) for c in row["checked"]), (
            f"{row['algorithm']} at {row['bytes']} B: sum outside the fp32 bound on some rank "
            f"({row['errors']})"
        )
        sent, s = row["bytes_sent_per_rank"], row["bytes"]
        if row["algorithm"] == "ring":  # exact for sizes divisible by p chunks of 4-byte elements
            ring = 2 * (p - 1) / p * s
            assert all(abs(b - ring) <= 8 * p for b in sent), (
                f"ring at {s} B over {p} ranks: bytes sent {sent}, expected 2(p−1)/p·S = {ring:.0f}"
            )
        if row["algorithm"] == "naive":
            assert sent[0] == (p - 1) * s and all(b == s for b in sent[1:]), (
                f"naive at {s} B over {p} ranks: bytes sent {sent}, expected (p−1)·S = {(p - 1) * s} "
                f"from rank 0 and S from each other rank"
            )
    checked = any(all(c is True for c in row["checked"]) for row in table)
    assert checked, "no size was checked against the truth"


def allreduce_cost_model(
    table: list[dict], p: int, device: str
) -> tuple[tuple[dict, dict, list[float]], Finding]:
    """The α–β model fitted to the naive, master and ring times, its error, its predictions at
    larger p, and the measured bus bandwidths. The row's times are the library all-reduce's at the
    largest size (one row per algorithm and size would need one test each); every point is in its
    extra keys."""
    fitted = [r for r in table if r["algorithm"] in ("naive", "master", "ring")]
    alpha, beta = fit_alpha_beta([(r["algorithm"], p, r["bytes"], r["median_s"]) for r in fitted])
    points = []
    for r in table:
        algbw, busbw = bus_bandwidth(r["bytes"], r["median_s"], p)
        points.append(
            {
                "algorithm": r["algorithm"],
                "bytes": r["bytes"],
                "measured_s": r["median_s"],
                "model_s": model_time(r["algorithm"], p, r["bytes"], alpha, beta),
                "algbw": algbw,
                "busbw": busbw,
                "bytes_sent_rank0": r["bytes_sent_per_rank"][0],
            }
        )
    predictions = [
        {"algorithm": a, "p": q, "bytes": r["bytes"], "model_s": model_time(a, q, r["bytes"], alpha, beta)}
        for a in ("naive", "ring")
        for q in (2, 4, 8, 16, 64)
        for r in table
        if r["algorithm"] == a
    ]
    rel = [
        abs(pt["model_s"] - pt["measured_s"]) / pt["measured_s"]
        for pt in points
        if pt["algorithm"] != "all_reduce"
    ]
    big = max(r["bytes"] for r in table)
    at = {pt["algorithm"]: pt for pt in points if pt["bytes"] == big}
    ratio64 = model_time("naive", 64, big, alpha, beta) / model_time("ring", 64, big, alpha, beta)
    finding = Finding(
        Verdict.HOLDS,
        f"every algorithm equals the float64 sum within p·u·Σ|x|; bytes sent per rank counted: ring "
        f"2(p−1)/p·S, naive rank 0 (p−1)·S. α–β fit at p={p}: α={alpha * 1e6:.1f} µs, "
        f"1/β={1 / beta / 1e9:.2f} GB/s (median |model−measured|/measured {_median(rel):.0%}); "
        f"at {big >> 20} MiB measured busbw "
        + ", ".join(f"{a} {pt['busbw'] / 1e9:.2f} GB/s" for a, pt in at.items())
        + f"; the model predicts naive/ring = {ratio64:.0f}× at p=64 for {big >> 20} MiB",
    )
    info = {
        "case": "parallel.allreduce",
        "kind": "distributed",
        "variant": "cost_model",
        "role": "library",
        "device": device,
        "size": {"world_size": p},
        "size_label": f"w{p}",
        "x": "bytes",
        "dtype": "float32",
    }
    extra = {
        "alpha_s": alpha,
        "beta_s_per_byte": beta,
        "points": points,
        "predictions": predictions,
        "model": "ring: 2(p-1)·α + 2(p-1)/p·S·β; naive/master: 2(p-1)·α + 2(p-1)·S·β",
    }
    times = next(r for r in table if r["algorithm"] == "all_reduce" and r["bytes"] == big)["times_s"]
    return (info, extra, times), finding


def allreduce_sweep_row(
    table: list[dict], p: int, algorithm: str, device: str
) -> tuple[dict, dict, list[float]]:
    """One algorithm's row: its largest message's times and bus bandwidth, the whole size sweep in
    the extra keys (the reports plot bus bandwidth against size, one line per algorithm)."""
    rows = [r for r in table if r["algorithm"] == algorithm]
    for r in rows:
        assert all(c in (True, None) for c in r["checked"]), f"{algorithm} at {r['bytes']} B: wrong sum"
    largest = rows[-1]
    algbw, busbw = bus_bandwidth(largest["bytes"], largest["median_s"], p)
    info = {
        "case": "parallel.allreduce",
        "kind": "distributed",
        "variant": algorithm,
        "role": ALLREDUCE_ROLES[algorithm],
        "size": {"bytes": largest["bytes"], "world_size": p},
        "size_label": f"bytes{largest['bytes']}-w{p}",
        "x": "bytes",
        "dtype": "float32",
        "device": device,
    }
    extra = {
        "bytes_sent": largest["bytes_sent_per_rank"][0],
        "algbw": algbw,
        "busbw": busbw,
        "sweep": [
            {
                "bytes": r["bytes"],
                "median_s": r["median_s"],
                "times_s": r["times_s"],
                "busbw": bus_bandwidth(r["bytes"], r["median_s"], p)[1],
            }
            for r in rows
        ],
    }
    return info, extra, largest["times_s"]
