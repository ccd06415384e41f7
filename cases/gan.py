"""A GAN step with two optimizers and ``G(z).detach()`` in the discriminator step (notes 004 "GAN训练技巧").

Without ``detach`` the discriminator's loss backpropagates into G and leaves gradients in G's
``.grad``; if G's step does not zero them first, G is updated with D's objective mixed in.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from cases.spec import UNIT_ROUNDOFF, Case, Check, Claim, ClaimKind, Finding, Verdict

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
    """One iteration as the notes describe it. Returns G's grads after D's backward, the gradient
    G was stepped with, the truth for it (the G loss alone against D after its step, by
    autograd.grad on a fresh forward), and whether each optimizer moved only its own network."""
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
    g_before_d_step = [p.detach().clone() for p in G.parameters()]
    opt_d.step()
    d_step_own = all(torch.equal(a, b) for a, b in zip(g_before_d_step, G.parameters())) and any(
        not torch.equal(a, b) for a, b in zip(d_before, D.parameters())
    )
    truth = torch.cat([t.flatten() for t in torch.autograd.grad(BCE(D(G(z)), ones), list(G.parameters()))])
    if zero_g_before_g_step:
        opt_g.zero_grad()
    g_params_before = [p.detach().clone() for p in G.parameters()]
    loss_g = BCE(D(fake), ones)  # non-saturating: label fake as real
    loss_g.backward()
    used = _flat_grad(G).clone()
    d_at_g_step = [p.detach().clone() for p in D.parameters()]
    opt_g.step()
    g_step_own = all(torch.equal(a, b) for a, b in zip(d_at_g_step, D.parameters())) and any(
        not torch.equal(a, b) for a, b in zip(g_params_before, G.parameters())
    )
    return g_after_d, used, truth, d_step_own and g_step_own


def _rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def check_detach(device):
    G, D, real, z = _models(device)
    G_nd, D_nd = copy.deepcopy(G), copy.deepcopy(D)
    # The technique: D's step on G(z).detach(), then G's step, one optimizer per network.
    g_after_d, used, truth, own = gan_step(G, D, real, z, detach=True, zero_g_before_g_step=False)
    # Without detach: D's loss leaves grads in G, and G's step takes them unless zeroed first.
    g_after_d_nd, used_nd, truth_nd, own_nd = gan_step(
        G_nd, D_nd, real, z, detach=False, zero_g_before_g_step=False
    )
    G3, D3, _, _ = _models(device)
    _, used_zeroed, truth_zeroed, _ = gan_step(G3, D3, real, z, detach=False, zero_g_before_g_step=True)
    # Without retain_graph, the usual loop (fake reused in the G step) does not run at all.
    G4, D4, _, _ = _models(device)
    fake = G4(z)
    ones, zeros = torch.ones(len(real), 1, device=device), torch.zeros(len(real), 1, device=device)
    (BCE(D4(real), ones) + BCE(D4(fake), zeros)).backward()
    try:
        BCE(D4(fake), ones).backward()
        reuse = None
    except RuntimeError as exc:
        reuse = str(exc).split(" (")[0]
    return judge_detach(
        g_after_d.abs().max().item(),
        _rel(used, truth),
        own and own_nd,
        g_after_d_nd.norm().item(),
        _rel(used_nd, truth_nd),
        _rel(used_zeroed, truth_zeroed),
        reuse,
    )


def judge_detach(
    leak_with_detach: float,
    detach_err: float,
    own_nets_only: bool,
    leak_without: float,
    without_err: float,
    zeroed_err: float,
    reuse_error: str | None,
) -> Finding:
    """The technique: two optimizers, D trained on G(z).detach(). Its D step leaves G's grads at
    exactly 0, G's step uses the G loss's gradient (against autograd.grad, fp32 rounding apart:
    1e-5 relative), and each optimizer moves only its own network. Without detach D's loss leaks
    into G's grads and G's step is off by it: what detach is for, so it must show too."""
    ok = leak_with_detach == 0.0 and detach_err <= 1e-5 and own_nets_only and leak_without > 0
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"with detach, D's backward leaves max |grad| {leak_with_detach:g} in G and G steps with its own "
        f"loss's gradient (relative error {detach_err:.2g}); each optimizer "
        + ("moves only its own network" if own_nets_only else "does NOT move only its own network")
        + f"; without detach, D's loss leaves |grad| = {leak_without:.3g} in G and G's step is off by "
        f"{without_err:.2f} (relative; {zeroed_err:.2g} with G's zero_grad right before its backward); "
        "without detach and retain_graph, reusing G(z) in the G step "
        + (f"raises RuntimeError ('{reuse_error}')" if reuse_error else "runs"),
    )


def check_non_saturating_loss(device):
    # Early in training D(G(z)) ≈ 0: logit a very negative.
    a = torch.tensor([-6.0, -3.0, 0.0], device=device, requires_grad=True)
    (saturating,) = torch.autograd.grad(torch.log1p(-torch.sigmoid(a)).sum(), a)  # min log(1−D(G(z)))
    (non_sat,) = torch.autograd.grad(BCE(a, torch.ones_like(a), reduction="sum"), a)  # −log D(G(z))
    p = torch.sigmoid(a.detach().double())  # the truth: σ in float64 of the same logits
    # The notes' losses as BCE with their labels: real label → −Σ log D, fake label → −Σ log(1−D).
    ad = a.detach().double()
    # float64 on both sides, sums of 3 positive terms a few roundings apart (≲ 8u₆₄ = 9e-16):
    # 1e-12 is float64 slack, 10⁷ below a swapped label (the losses differ by O(1)).
    labels_right = torch.allclose(
        BCE(ad, torch.ones_like(ad), reduction="sum"), -torch.log(p).sum(), rtol=1e-12, atol=0
    ) and torch.allclose(
        BCE(ad, torch.zeros_like(ad), reduction="sum"), -torch.log1p(-p).sum(), rtol=1e-12, atol=0
    )
    # Derivatives in closed form: d/da log(1−σ(a)) = −σ(a), d/da −log σ(a) = σ(a) − 1. fp32 σ (exp,
    # a sum, a quotient: ≤ 2 ulp + 2u = 6u) and the chain's ≤ 4 more roundings: 10u relative, ×1.6.
    grad_rtol = 16 * UNIT_ROUNDOFF[torch.float32]
    formulas = torch.allclose(saturating.double(), -p, rtol=grad_rtol, atol=0) and torch.allclose(
        non_sat.double(), p - 1, rtol=grad_rtol, atol=0
    )
    return judge_non_saturating(saturating[0].item(), non_sat[0].item(), formulas, labels_right)


def judge_non_saturating(
    saturating: float, non_saturating: float, formulas: bool, labels_right: bool
) -> Finding:
    """The notes' G loss: label fakes as real and minimise −log D(G(z)). Where D rejects the fakes
    (D(G(z)) = σ(−6)) its gradient must be larger than that of the theoretical log(1−D(G(z))),
    which saturates; the notes' D and G losses must be BCE with the labels they name."""
    ratio = non_saturating / saturating if saturating else float("inf")
    ok = formulas and labels_right and abs(non_saturating) > abs(saturating)
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"at D(G(z)) = σ(−6): d/da log(1−σ(a)) = {saturating:.4f}, d/da −log σ(a) = {non_saturating:.4f} "
        f"({ratio:.0f}× larger); derivatives "
        + ("match" if formulas else "do NOT match")
        + " −σ(a) and σ(a)−1; BCE with label real/fake "
        + ("is" if labels_right else "is NOT")
        + " −Σlog D / −Σlog(1−D), the notes' losses",
    )


def check_d_losses(device):
    """The notes' D losses: −Σ log D(x) with the real label, −Σ log(1−D(G(z))) with the fake label;
    the suite computes them with BCE-with-logits (float64) and compares them to the formulas."""
    G, D, real, z = _models(device)
    G, D, real, z = G.double(), D.double(), real.double(), z.double()
    with torch.no_grad():
        d_real, d_fake = D(real), D(G(z))
    ones, zeros = torch.ones_like(d_real), torch.zeros_like(d_fake)
    bce_real = BCE(d_real, ones, reduction="sum").item()
    bce_fake = BCE(d_fake, zeros, reduction="sum").item()
    notes_real = -torch.log(torch.sigmoid(d_real)).sum().item()
    notes_fake = -torch.log1p(-torch.sigmoid(d_fake)).sum().item()
    return judge_d_losses(bce_real, notes_real, bce_fake, notes_fake)


def judge_d_losses(bce_real: float, notes_real: float, bce_fake: float, notes_fake: float) -> Finding:
    """Holds when BCE with the real label is the notes' loss_real and BCE with the fake label their
    loss_fake, to float64 slack (1e-12 relative: sums of 32 terms a few roundings apart, ≲ 1e-14;
    a swapped label is O(1) off)."""

    def close(a, b):
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)

    ok = close(bce_real, notes_real) and close(bce_fake, notes_fake)
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"BCE(D(x), real) = {bce_real:.6g} vs −Σlog D(x) = {notes_real:.6g}; BCE(D(G(z)), fake) = "
        f"{bce_fake:.6g} vs −Σlog(1−D(G(z))) = {notes_fake:.6g}: "
        + ("equal (float64)" if ok else "NOT equal"),
    )


def check_expectation_gradient(device):
    """The notes: "对 f(x) 期望的梯度等于对f(x)自身的梯度" — the gradient of the minibatch mean
    (the estimate of the expectation) is the mean of the per-sample gradients."""
    _, D, real, _ = _models(device)
    D = D.double()
    x = real.double()
    params = list(D.parameters())
    ones = torch.ones(1, 1, dtype=torch.float64, device=x.device)
    batch = torch.autograd.grad(BCE(D(x), ones.expand(len(x), 1)), params)
    per_sample = [torch.autograd.grad(BCE(D(x[i : i + 1]), ones), params) for i in range(len(x))]
    mean = [torch.stack(gs).mean(0) for gs in zip(*per_sample)]
    num = sum((a - b).square().sum() for a, b in zip(batch, mean)).sqrt().item()
    den = sum(b.square().sum() for b in mean).sqrt().item()
    return judge_expectation_gradient(num / den if den else float("inf"), len(x))


def judge_expectation_gradient(rel_err: float, n: int) -> Finding:
    """Holds when ∇ mean_i f(x_i) equals mean_i ∇ f(x_i) to float64 slack (1e-12 relative: the two
    sum the same n terms in another order)."""
    ok = rel_err <= 1e-12
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"gradient of D's mean BCE over {n} samples vs the mean of the {n} per-sample gradients: "
        f"relative difference {rel_err:.2g} (float64)" + ("" if ok else ": NOT equal"),
    )


CASE = Case(
    id="gan.two_optimizers",
    tier=3,
    claim="Train a GAN with one optimizer per network; use G(z).detach() in the D step; train G with fakes "
    "labelled real (max log D(G(z))).",
    source="004 GAN训练技巧",
    claims=(
        Claim(
            "two_optimizers",
            "因为要分别训练两个网络，需要各自两个optimizer对应这两个网络的参数",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "expectation_gradient",
            "观察到对 f(x) 期望的梯度等于对f(x)自身的梯度",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "d_losses",
            "loss_{real} = -\\sum log(D(x^i)) ---标签为real label; l"
            "oss_{fake} = -\\sum log(1-D(G(z^i))) ---标签为fake label",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "g_loss",
            "NN中最小化将G(z)的标签全部设置为real, 最小化损失 loss = -\\sum log(D(G(z^i)))",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        # Two optimizers, each moving its own network; G(z).detach() in D's step (the catalogue's
        # addition) is judged with it.
        "detach": Check(check_detach, claim="two_optimizers"),
        "expectation_gradient": Check(check_expectation_gradient, claim="expectation_gradient"),
        "d_losses": Check(check_d_losses, claim="d_losses"),
        "non_saturating_loss": Check(check_non_saturating_loss, claim="g_loss"),
    },
)
