"""Hand-made rank files of a launched training run (what `cases._launch.launched_training` reads from
each rank), for the distributed cases' judge tests: no process is launched."""

from __future__ import annotations


def train_rows(world: int) -> list[dict]:
    """One row per rank of a `world`-rank DDP run in which every rank agrees."""
    mode = {
        "step_s": [0.01, 0.02],
        "params_rel_err": 0.0,
        "params_within_tol": True,
        "grad_rel_err": 0.0,
        "grad_within_tol": True,
        "params_sha1": "same",
        "tol": {},
    }
    return [
        {
            "rank": r,
            "world_size": world,
            "batch": 64,
            "params": 10,
            "backend": "gloo",
            "modes": {"ddp": dict(mode)},
        }
        for r in range(world)
    ]
