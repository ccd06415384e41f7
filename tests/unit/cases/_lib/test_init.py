"""cases/_lib/init.py: the norm layers leave the identity, drawn from the seeded global RNG; other
layers are left alone."""

from __future__ import annotations

import torch
from torch import nn

from cases._lib.init import perturb_norms


def _model():
    return nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.GroupNorm(2, 4))


def test_norm_layers_leave_the_identity_and_the_rest_is_untouched():
    torch.manual_seed(0)
    model = _model()
    linear = nn.Linear(4, 4)
    linear.load_state_dict(model[0].state_dict())
    assert perturb_norms(model) is model
    for norm in (model[1], model[2]):
        assert not torch.equal(norm.weight, torch.ones(4)) and not torch.equal(norm.bias, torch.zeros(4))
        assert (norm.weight - 1).abs().max() < 1.0  # N(1, 0.1): near the identity, not far from it
    assert torch.equal(model[0].weight, linear.weight) and torch.equal(model[0].bias, linear.bias)


def test_the_draw_follows_the_global_seed():
    torch.manual_seed(1)
    a = perturb_norms(_model())[1].weight.detach().clone()
    torch.manual_seed(1)
    assert torch.equal(perturb_norms(_model())[1].weight, a)
