"""What CI's quick sizes cannot show about the full profile's oracles, checked on the CPU at a
fraction of the cost.

parallel.manual_dp (issue 16): at batch 4096 × hidden 4096 a fixed lr = 0.05 diverged (loss 1.6e3
→ 1e28 in 3 steps), and fp32 and float64 training ended 5–30 % apart on the H100; the quick size
(hidden 128) sat at the edge and passed. The curvature that decides it grows with the hidden width
(≈ hidden/π, `cases.parallel.manual_dp`'s comment) and hardly depends on the batch or the input
width, so the full-profile widths are trained here on a small batch and input, in float64.
"""

from __future__ import annotations

import pytest
import torch

from cases.parallel import manual_dp


def _loss(params, x, y) -> float:
    return ((manual_dp.mlp_forward(params, x) - y) ** 2).sum().item() / x.shape[0]


@pytest.mark.parametrize("hidden", sorted({s["hidden"] for s in manual_dp.CASE.sizes_for("full")}))
def test_manual_dp_training_contracts_at_every_full_profile_width(hidden):
    size = {"batch": 256, "hidden": hidden, "d": 64, "replicas": 1}
    *params, x, y, replicas = manual_dp.make_mlp_problem(size, torch.float64, "cpu", seed=0)
    losses = [_loss(params, x, y)]
    for steps in range(1, manual_dp.MANUAL_STEPS + 1):
        trained = manual_dp.single_device_train(*params, x, y, replicas, steps=steps)
        losses.append(_loss(trained, x, y))
    assert all(b < a for a, b in zip(losses, losses[1:])), (
        f"hidden {hidden}, lr {manual_dp.manual_lr(params[0]):.3g}: the loss per step {losses} does not "
        "fall: the fp32 runs would be compared with float64 through a divergence"
    )
