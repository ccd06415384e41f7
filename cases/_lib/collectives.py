"""All-reduce algorithms and their cost (`parallel.allreduce`, `parallel.manual_dp`): the naive,
master and ring forms over a process group (run inside `cases._launch.dist_worker`'s ranks), d2l's sum
over a list of tensors in one process, the float64 truth any of them is checked against, and the
α–β model fitted to their times.

Cost comments count bytes *sent by one rank* for a message of S bytes over p ranks.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from cases.spec import UNIT_ROUNDOFF

U32 = UNIT_ROUNDOFF[torch.float32]


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


def rank_tensor(numel: int, rank: int, seed: int) -> torch.Tensor:
    """Rank r's contribution: every rank can rebuild every other rank's, so each can check the sum."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return torch.randn(numel, generator=g)


def allreduce_bound(numel: int, p: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The float64 sum of all ranks' tensors and the rigorous fp32 error bound for any summation
    order: |Σ̂ − Σ| ≤ γ_{p−1}·Σ|x_i| ≤ p·u·Σ|x_i| (and 0 for p = 1)."""
    parts = torch.stack([rank_tensor(numel, r, seed).double() for r in range(p)])
    return parts.sum(0), p * U32 * parts.abs().sum(0)


# ---- all-reduce over the devices of one process (d2l, notes 002) ---------------------------------


def d2l_allreduce(data: list[torch.Tensor]) -> None:
    """Verbatim from notes 002: sum into data[0], copy back. Device 0 receives (k−1)·S and sends
    (k−1)·S: the master pattern, through one device."""
    for i in range(1, len(data)):
        data[0][:] += data[i].to(data[0].device)
    for i in range(1, len(data)):
        data[i][:] = data[0].to(data[i].device)


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
