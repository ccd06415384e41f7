"""Shared parameter initialisation for cases that build real models."""

from __future__ import annotations

import torch
from torch import nn


def perturb_norms(module: nn.Module) -> nn.Module:
    """Norm layers start as the identity (weight 1, bias 0); a trained net's are not, and an
    all-zero bias would hide a dropped bias gradient. Drawn from the seeded global RNG."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.LayerNorm, nn.GroupNorm)):
                m.weight.normal_(1.0, 0.1)
                m.bias.normal_(0.0, 0.1)
    return module
