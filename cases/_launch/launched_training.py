"""The launched training runs of `parallel.dp_vs_ddp` and `parallel.average_gradient`, read on the
judging side: the sizes the suite launches, the equivalence launch both cases' checks share, and
what every training mode's rank files must show before its step times count (`trained`).

`cases._launch.dist_worker` writes one JSON per rank (one dict per rank, in rank order); a wrong launch is
an AssertionError with its message (`harness.run.launch.LaunchFailed` where it did not finish), never a
verdict. A benchmark row is (the
`harness.contract.record.BenchmarkInfo` fields, its extra keys, the per-step seconds pytest-benchmark
replays).
"""

from __future__ import annotations

import functools
from statistics import median

import torch

from cases._lib.data_parallel import reduction_tolerance

# quick: the 1.6 M-parameter MLP (a 6.4 MB gradient all-reduce per step) for 5 steps, seconds on
# 2 CPU cores; full: width 4096 (18.9 M parameters, 75 MB per step) and a batch that fills a GPU.
TRAIN_SIZES = {
    "quick": {"width": 1024, "batch": 64, "steps": 5},
    "full": {"width": 4096, "batch": 1024, "steps": 20},
}
TRAIN_ROLES = {"dp": "naive", "ddp": "optimized", "avg_grad": "naive"}

EQUIVALENCE_SIZE = {"dim": 32, "width": 64, "batch": 32, "steps": 3, "lr": 0.1}
EQUIVALENCE_WORLD = 2


@functools.lru_cache(maxsize=1)
def equivalence_ranks() -> tuple[dict, ...]:
    """`cases._launch.dist_worker equivalence` under torchrun, 2 gloo ranks on CPU (a few seconds, mostly
    process start-up); launched once and read by both checks that need it."""
    import shutil
    import tempfile
    from pathlib import Path

    from harness.run import launch

    out = Path(tempfile.mkdtemp(prefix="equivalence-"))
    try:
        args = ["equivalence", "--device", "cpu"]
        args += [a for k, v in EQUIVALENCE_SIZE.items() for a in (f"--{k}", str(v))]
        run = launch.torchrun(
            "cases._launch.dist_worker", args, nproc=EQUIVALENCE_WORLD, out_dir=out, timeout_s=120.0
        )
        assert run.ok, f"equivalence launch: {run.describe()}"
        rows = tuple(run.results("equivalence"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert [r["rank"] for r in rows] == list(range(EQUIVALENCE_WORLD)), f"rank files: {len(rows)}"
    return rows


def equivalence_bound(rows) -> float:
    """`reduction_tolerance` at the equivalence run's own dtype, size and world."""
    r = rows[0]
    u = torch.finfo(getattr(torch, r["dtype"].removeprefix("torch."))).eps / 2
    return reduction_tolerance(u, r["batch"], r["width"], r["d"], r["world_size"])


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


def trained(run, mode: str) -> list[dict]:
    """The rank files of a finished `train` launch (a `harness.run.launch.Launch`) whose `mode` trained
    to full-batch SGD's parameters (`check_training`)."""
    run.require_ok(f"train ({mode})")
    rows = run.results("train")
    check_training(rows, mode)
    return rows


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
        "samples_per_s": batch / median(times),
        "params_rel_err": max(r["modes"][mode]["params_rel_err"] for r in rows),
    }
    return info, extra, times
