"""A GAN step with two optimizers and ``G(z).detach()`` in the discriminator step (notes 004 "GAN训练技巧").

Without ``detach`` the discriminator's loss backpropagates into G and leaves gradients in G's
``.grad``; if G's step does not zero them first, G is updated with D's objective mixed in.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from cases.spec import Case, Check, Finding, Verdict

BCE = nn.functional.binary_cross_entropy_with_logits


def _models(device, seed=0):
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
    D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)).to(device)
    torch.random.set_rng_state(state)
    g = torch.Generator().manual_seed(seed + 1)
    real = (torch.randn(32, 2, generator=g) * 0.5 + 2).to(device)
    z = torch.randn(32, 4, generator=g).to(device)
    return G, D, real, z


def _flat_grad(model):
    return torch.cat(
        [(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in model.parameters()]
    )


def gan_step(G, D, real, z, detach: bool, zero_g_before_g_step: bool):
    """One iteration as the notes describe it; returns the gradient G was stepped with."""
    opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
    ones, zeros = torch.ones(len(real), 1, device=real.device), torch.zeros(len(real), 1, device=real.device)
    opt_g.zero_grad()
    opt_d.zero_grad()
    fake = G(z)
    loss_d = BCE(D(real), ones) + BCE(D(fake.detach() if detach else fake), zeros)
    # Without detach, D's backward frees G's graph, which the G step reuses: it needs retain_graph.
    loss_d.backward(retain_graph=not detach)
    g_after_d = _flat_grad(G).clone()
    d_before = [p.detach().clone() for p in D.parameters()]
    opt_d.step()
    if zero_g_before_g_step:
        opt_g.zero_grad()
    g_params_before = [p.detach().clone() for p in G.parameters()]
    loss_g = BCE(D(fake), ones)  # non-saturating: label fake as real
    loss_g.backward()
    used = _flat_grad(G).clone()
    d_at_g_step = [p.detach().clone() for p in D.parameters()]
    opt_g.step()
    d_untouched = all(torch.equal(a, b) for a, b in zip(d_at_g_step, D.parameters()))
    g_moved = any(not torch.equal(a, b) for a, b in zip(g_params_before, G.parameters()))
    assert d_untouched and g_moved, "each optimizer should move only its own network"
    assert any(not torch.equal(a, b) for a, b in zip(d_before, D.parameters()))
    return g_after_d, used


def check_detach(device):
    G, D, real, z = _models(device)
    # The truth for G's gradient: only the G loss, against D after its step, by autograd.grad.
    G_ref, D_ref = copy.deepcopy(G), copy.deepcopy(D)
    g_after_d, used = gan_step(G, D, real, z, detach=True, zero_g_before_g_step=False)
    assert g_after_d.abs().max().item() == 0.0, "with detach, D's loss must leave G's grads empty"
    g_after_d_nd, used_nd = gan_step(G_ref, D_ref, real, z, detach=False, zero_g_before_g_step=False)
    pollution = g_after_d_nd.norm().item()
    assert pollution > 0, "without detach, D's loss should put gradients into G"
    # The clean G gradient is the same computed either way once G's grads are zeroed first.
    G3, D3, _, _ = _models(device)
    _, clean = gan_step(G3, D3, real, z, detach=False, zero_g_before_g_step=True)
    torch.testing.assert_close(clean, used, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(used_nd - g_after_d_nd, clean, rtol=1e-4, atol=1e-6)
    rel = ((used_nd - clean).norm() / clean.norm()).item()
    # And without retain_graph, the usual loop (fake reused in the G step) does not run at all.
    G4, D4, _, _ = _models(device)
    fake = G4(z)
    ones, zeros = torch.ones(len(real), 1, device=device), torch.zeros(len(real), 1, device=device)
    (BCE(D4(real), ones) + BCE(D4(fake), zeros)).backward()
    try:
        BCE(D4(fake), ones).backward()
        reuse_raises = False
    except RuntimeError:
        reuse_raises = True
    assert reuse_raises, "the freed G graph should not support a second backward"
    return Finding(
        Verdict.HOLDS if rel > 1e-3 else Verdict.DEPENDS,
        f"without detach, D's loss leaves |grad| = {pollution:.3g} in G; G's step then uses a gradient off "
        f"by {rel:.2f} (relative) unless G's zero_grad comes right before its backward; with detach G's "
        "grads stay exactly 0 and each optimizer moves only its own network; without detach (and no "
        "retain_graph) reusing G(z) in the G step raises RuntimeError",
    )


def check_non_saturating_loss(device):
    # Early in training D(G(z)) ≈ 0: logit a very negative.
    a = torch.tensor([-6.0, -3.0, 0.0], device=device, requires_grad=True)
    (saturating,) = torch.autograd.grad(torch.log1p(-torch.sigmoid(a)).sum(), a)  # min log(1−D(G(z)))
    (non_sat,) = torch.autograd.grad(BCE(a, torch.ones_like(a), reduction="sum"), a)  # −log D(G(z))
    torch.testing.assert_close(saturating, -torch.sigmoid(a.detach()), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(non_sat, torch.sigmoid(a.detach()) - 1, rtol=1e-5, atol=1e-7)
    ratio = (non_sat[0] / saturating[0]).item()
    return Finding(
        Verdict.HOLDS,
        f"at D(G(z)) = σ(−6): d/da log(1−σ(a)) = {saturating[0].item():.4f}, d/da −log σ(a) = "
        f"{non_sat[0].item():.4f} ({ratio:.0f}× larger): labelling fakes as real is the usable G loss",
    )


CASE = Case(
    id="gan.two_optimizers",
    tier=3,
    claim="Train a GAN with one optimizer per network; use G(z).detach() in the D step; train G with fakes "
    "labelled real (max log D(G(z))).",
    source="004 GAN训练技巧",
    checks={
        "detach": Check(check_detach),
        "non_saturating_loss": Check(check_non_saturating_loss),
    },
)
