"""Averaging gradients by hand (notes 000/001 "Multi-GPU"): all_reduce each gradient after
backward, then divide by the world size, against DDP.

In-process here: the notes' `all_reduce_multigpu` call as written (a one-process gloo group) and
the averaged gradient against the float64 full-batch one (from the shared equivalence launch).
Launched (`cases._launch.dist_launches`, for `suite/test_distributed.py`): the averaged gradient
against DDP's on every rank (`launched_average_gradient`, `average_gradient_vs_ddp`).
"""

from __future__ import annotations

from statistics import median

import torch
import torch.distributed as dist
from torch import nn

from cases._launch.dist_launches import LaunchRecord, Runs
from cases._launch.launched_training import (
    equivalence_bound,
    equivalence_ranks,
    step_times,
    train_row,
    trained,
)
from cases._lib.data_parallel import make_batch, make_mlp, notes_average_gradient
from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict
from harness.contract.rules import FromFindings

# ---- the notes' call, as written ----------------------------------------------------------------------


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
    """What the notes' average_gradient does as written, as context: the call it makes is gone
    from torch (a removed API, a slip: one tensor per process, dist.all_reduce is the same
    reduction). That erratum is listed once, by the reading of the notes' snippet (000's
    `dist_spawn`), so none is listed here; the technique is judged with the call replaced
    (averages_to_full_batch) and against DDP's gradients (the launched vs_ddp)."""
    if exists and not error:
        return Finding(None, f"torch {torch.__version__}: the notes' all_reduce_multigpu call runs")
    return Finding(
        None,
        f"torch {torch.__version__}: the notes' average_gradient, as written, raises {error}"
        + ("" if exists else ": all_reduce_multigpu is removed from torch.distributed"),
    )


# ---- against the float64 full-batch gradient (the shared equivalence launch) ---------------------------


def check_average_gradient_full_batch(device):
    """The notes' average_gradient with dist.all_reduce (one tensor per process), after one
    backward on each rank's shard, against the float64 full-batch gradient."""
    rows = equivalence_ranks()
    return judge_average_gradient(
        max(max(r["avg_grad_rel_err"]) for r in rows),
        min(min(r["summed_rel_err"]) for r in rows),
        min(min(r["local_rel_err"]) for r in rows),
        equivalence_bound(rows),
        rows[0]["world_size"],
    )


def judge_average_gradient(error: float, summed: float, local: float, bound: float, world: int) -> Finding:
    """Holds where every rank's averaged gradient is within the fp32 bound of the float64
    full-batch gradient (largest error over ranks and parameter tensors)."""
    return Finding(
        Verdict.HOLDS if error <= bound else Verdict.FAILS,
        f"{world} gloo ranks, the notes' average_gradient with its removed all_reduce_multigpu([grad]) "
        f"read as dist.all_reduce(grad): all_reduce(SUM) then ÷{world} after backward gives the "
        "full-batch gradient "
        f"within {error:.2g} of float64 norm-wise (bound {bound:.2g}); without the ÷ the sum is off by "
        f"≥ {summed:.2g}, a rank's own shard gradient by ≥ {local:.2g}",
    )


# ---- the case ----------------------------------------------------------------------------------------

CASE = Case(
    id="parallel.average_gradient",
    tier=2,
    claim="Averaging gradients by hand with all_reduce after backward gives DDP's gradients "
    "(the notes' version uses all_reduce_multigpu).",
    source="000/001 Multi-GPU",
    claims=(
        Claim(
            "averages_gradients",
            "def average_gradient(model): size = float(dist.get_world_size()) … dist.all_reduce_multigpu("
            "[param.grad.data], op=dist.ReduceOp.SUM)  # 将所有进程中 Tensor 求和并存储于个进程中 … "
            "param.grad.data /= size",
            "000",
            ClaimKind.CORRECTNESS,
            reading="after backward on each rank's shard, summing every gradient over the ranks and "
            "dividing by the world size gives the full-batch gradient on every rank; judged with "
            "all_reduce_multigpu([grad]), removed from torch (its erratum), read as "
            "dist.all_reduce(grad), the same reduction for one tensor per process",
        ),
    ),
    checks={
        # The notes' call as written: context (its removed-API erratum is the snippet reading's).
        "all_reduce_multigpu_removed": Check(check_all_reduce_multigpu_removed),
        "averages_to_full_batch": Check(
            check_average_gradient_full_batch, devices=("cpu",), claim="averages_gradients"
        ),
    },
    # The launched comparison with DDP's gradients (`vs_ddp-w{N}`) is the catalogue's: context.
    requires=("distributed",),
    verdict=FromFindings(),
)


# ---- judging the launched runs -----------------------------------------------------------------------


def average_gradient_vs_ddp(rows: list[dict]) -> tuple[dict, Finding]:
    """Manual averaging's first gradient against DDP's on every rank, and the two step times."""
    bitwise = all(r["avg_grad_vs_ddp"]["bitwise_equal"] for r in rows)
    worst = max(rows, key=lambda r: r["avg_grad_vs_ddp"]["grad_rel_diff"] / r["avg_grad_vs_ddp"]["tol"])
    step = median(step_times(rows, "avg_grad"))
    ddp = median(step_times(rows, "ddp"))
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


def launched_average_gradient(runs: Runs, device: str, world: int) -> LaunchRecord:
    """Manual averaging's row at `world` ranks (grouped with DDP's), and its gradient against DDP's."""
    rows = trained(runs.train(device, world), "avg_grad")
    versus, finding = average_gradient_vs_ddp(rows)
    info, extra, times = train_row(rows, "avg_grad", device)
    group = f"parallel.dp_vs_ddp w{world} {device}"
    return LaunchRecord(f"vs_ddp-w{world}", finding, group, (info, {**extra, **versus}, times))
