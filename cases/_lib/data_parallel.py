"""What every data-parallel run trains and what it is held to (the `parallel.*` cases and
`cases._launch.dist_worker`): a seeded MLP and batch, the single-device training that is the truth, the
fp32 bounds of a sharded run against it, and gradient averaging by hand, as the notes write it and
with the call the installed torch has.

The ranks import this module under torchrun, so it holds no case and launches nothing.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
from torch import nn

from cases.spec import UNIT_ROUNDOFF
from harness.measure import device as harness_device

U32 = UNIT_ROUNDOFF[torch.float32]


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


def replica_devices(device: torch.device, replicas: int) -> list[torch.device]:
    """One device per replica: distinct GPUs when there are enough, otherwise replicas share the
    device (on CPU, or one GPU: the cost of the machinery without any parallel hardware)."""
    if device.type == "cuda":
        count = harness_device.cuda_count()
        return [torch.device("cuda", i % count) for i in range(replicas)]
    return [device] * replicas


# ---- the bounds a sharded run is held to -----------------------------------------------------------


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
