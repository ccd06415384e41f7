"""A GAN step with two optimizers and ``G(z).detach()`` in the discriminator step (notes 004 "GAN训练技巧").

Without ``detach`` the discriminator's loss backpropagates into G and leaves gradients in G's
``.grad``; if G's step does not zero them first, G is updated with D's objective mixed in.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict

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
    """The notes' recipe: one optimizer per network, each stepping its own parameters. Holds when
    each optimizer moves only its own network and G's step uses its own loss's gradient (against
    autograd.grad of the G loss alone, fp32 rounding apart: 1e-5 relative), both where D is
    trained on G(z).detach() and where G's grads are zeroed right before its backward. What
    leaks into G without either (G(z).detach() is the catalogue's addition) is context."""
    ok = own_nets_only and detach_err <= 1e-5 and zeroed_err <= 1e-5
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        "two optimizers: each "
        + ("moves only its own network" if own_nets_only else "does NOT move only its own network")
        + f"; G steps with its own loss's gradient to {detach_err:.2g} (relative) with D on G(z).detach(), "
        f"{zeroed_err:.2g} with G's zero_grad right before its backward"
        + ("" if ok else ": NOT its own loss's gradient" if own_nets_only else "")
        + f". Context: with detach D's backward leaves max |grad| {leak_with_detach:g} in G; without detach "
        f"it leaves |grad| = {leak_without:.3g} and, unzeroed, G's step is off by {without_err:.2f} "
        "(relative); without detach and retain_graph, reusing G(z) in the G step "
        + (f"raises RuntimeError ('{reuse_error}')" if reuse_error else "runs"),
    )


def _sum_bce(p, label):
    """The notes' losses as a user writes them with labels: BCE on D's probability, summed over the
    batch (label 1: −Σ log D, label 0: −Σ log(1 − D))."""
    return nn.functional.binary_cross_entropy(p, torch.full_like(p, float(label)), reduction="sum")


# A 1-D GAN whose optimal discriminator is known in closed form: data ~ N(1, 1), G's samples
# ~ N(−1, 1). log p_data/p_g = ((x+1)² − (x−1)²)/2 = 2x, so D*(x) = p_data/(p_data + p_g) = σ(2x):
# a logistic D(x) = σ(w·x + b) reaches it at (w, b) = (2, 0).
D_STAR = (2.0, 0.0)
N_D = 20_000


def _fit_logistic_d(device, real_label=1, fake_label=0):
    g = torch.Generator().manual_seed(5)
    real = (torch.randn(N_D, generator=g, dtype=torch.float64) + 1).to(device)
    fake = (torch.randn(N_D, generator=g, dtype=torch.float64) - 1).to(device)

    def loss(v):
        loss_real = _sum_bce(torch.sigmoid(v[0] * real + v[1]), real_label)
        loss_fake = _sum_bce(torch.sigmoid(v[0] * fake + v[1]), fake_label)
        return loss_real + loss_fake

    v = torch.zeros(2, dtype=torch.float64, device=device, requires_grad=True)
    opt = torch.optim.LBFGS(
        [v], max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-12, tolerance_change=1e-15
    )

    def closure():
        opt.zero_grad()
        value = loss(v)
        value.backward()
        return value

    opt.step(closure)
    fit = v.detach()
    # The summed loss is the negative log-likelihood of a well-specified logistic model: the fit's
    # asymptotic covariance is the inverse of its Hessian there.
    hessian = torch.autograd.functional.hessian(loss, fit)
    se = torch.linalg.inv(hessian).diagonal().sqrt()
    return fit.tolist(), se.tolist()


def check_d_losses(device):
    """The notes' D step: minimise loss_real (real label) + loss_fake (fake label). The theory it
    stands for, max_D E log D(x) + E log(1 − D(G(z))), is maximised by D* = p_data/(p_data + p_g):
    fitting D with the notes' losses must land on D*, which is known here in closed form."""
    fit, se = _fit_logistic_d(device)
    return judge_d_losses(fit, se, D_STAR, N_D)


# A fit of N samples lies within 6 standard errors of the truth but once in 5e8; a swapped label
# lands at (−2, 0), ~100 standard errors away at N = 2e4.
Z_MAX = 6.0


def judge_d_losses(fit: list[float], se: list[float], truth: tuple[float, float], n: int) -> Finding:
    """Holds when D fitted with the notes' loss_real + loss_fake is the theory's optimal D*:
    (w, b) within `Z_MAX` standard errors of D*'s (2, 0)."""
    z = [abs(f - t) / s if s > 0 else float("inf") for f, t, s in zip(fit, truth, se)]
    ok = all(v <= Z_MAX for v in z)
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"D(x) = σ(w·x + b) fitted with −Σlog D(x) (real label) − Σlog(1−D(G(z))) (fake label) on {n}+{n} "
        f"samples: (w, b) = ({fit[0]:.4f}, {fit[1]:.4f}) ± ({se[0]:.3f}, {se[1]:.3f}); the theory's "
        f"optimum p_data/(p_data+p_g) = σ({truth[0]:g}x + {truth[1]:g}) is "
        + (
            f"within {max(z):.1f} standard errors"
            if ok
            else f"{max(z):.1f} standard errors away: NOT reached"
        ),
    )


def _one_sample_grads(theta, z, a):
    """Per-sample gradients of f(G(z)) = exp(a·G(z)), G(z) = θ₁ + θ₂·z, by autograd: θ repeated per
    sample, so the gradient of the sum is each sample's own."""
    t1 = torch.full_like(z, theta[0]).requires_grad_()
    t2 = torch.full_like(z, theta[1]).requires_grad_()
    torch.exp(a * (t1 + t2 * z)).sum().backward()
    return torch.stack([t1.grad, t2.grad], dim=1)


EXP_A, EXP_THETA, N_EXP = 0.5, (0.3, 0.8), 100_000


def check_expectation_gradient(device):
    """The notes: "对 f(x) 期望的梯度等于对f(x)自身的梯度" — the gradient of E f can be had from the
    gradients of f at the samples. With x = G(z) = θ₁ + θ₂z, z ~ N(0, 1) and f = exp(a·x), E f =
    exp(aθ₁ + a²θ₂²/2) in closed form, so ∇θ E f = (a, a²θ₂)·E f. The per-sample autograd
    gradients' mean must land on it (within its standard error); a single sample's spreads."""
    a, theta = EXP_A, EXP_THETA
    z = torch.randn(N_EXP, generator=torch.Generator().manual_seed(7), dtype=torch.float64).to(device)
    grads = _one_sample_grads(theta, z, a)
    mean, std = grads.mean(0), grads.std(0)
    e_f = math.exp(a * theta[0] + a * a * theta[1] ** 2 / 2)
    truth = [a * e_f, a * a * theta[1] * e_f]
    return judge_expectation_gradient(mean.tolist(), (std / N_EXP**0.5).tolist(), truth, std.tolist(), N_EXP)


def judge_expectation_gradient(
    mean: list[float], se: list[float], truth: list[float], one_sample_std: list[float], n: int
) -> Finding:
    """Holds when the mean of n per-sample gradients is the closed-form ∇θ E f within `Z_MAX`
    standard errors; the gradient of f at the mean sample, (a·e^{aθ₁}, 0), is ~100 away."""
    z = [abs(m - t) / s if s > 0 else float("inf") for m, t, s in zip(mean, truth, se)]
    ok = all(v <= Z_MAX for v in z)
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"∇θ E[exp(a·G(z))] in closed form = ({truth[0]:.5f}, {truth[1]:.5f}); the mean of {n} per-sample "
        f"autograd gradients = ({mean[0]:.5f}, {mean[1]:.5f}), "
        + (f"within {max(z):.1f} standard errors" if ok else f"{max(z):.1f} standard errors away: NOT equal")
        + f"; one sample's gradient spreads by ({one_sample_std[0]:.3f}, {one_sample_std[1]:.3f}) around it "
        "(equal in expectation, not per sample)",
    )


def check_non_saturating_loss(device):
    """The notes' G step: label G(z) real and minimise −Σ log D(G(z)), for max E log D(G(z)). With
    D fixed at D*(x) = σ(2x) (data at +1) and G's samples near −3 (D(G(z)) ≈ σ(−6): D rejects them),
    SGD on the notes' loss must raise E log D(G(z)); the theory's min E log(1 − D(G(z))) is
    stepped alongside for context."""
    z = torch.randn(256, generator=torch.Generator().manual_seed(9), dtype=torch.float64).to(device)

    def d(x):
        return torch.sigmoid(D_STAR[0] * x + D_STAR[1])

    def run(g_loss, steps=20, lr=0.05):
        theta = torch.tensor([-3.0, 0.5], dtype=torch.float64, device=device, requires_grad=True)
        opt = torch.optim.SGD([theta], lr=lr)
        before = torch.log(d(theta[0] + theta[1] * z)).mean().item()
        for _ in range(steps):
            opt.zero_grad()
            g_loss(d(theta[0] + theta[1] * z)).backward()
            opt.step()
        after = torch.log(d(theta[0] + theta[1] * z)).mean().item()
        return before, after, theta[0].item()

    notes = run(lambda p: _sum_bce(p, 1) / len(z))  # the real label on G(z): −mean log D(G(z))
    theory = run(lambda p: torch.log1p(-p).mean())  # min E log(1 − D(G(z)))
    return judge_non_saturating(notes, theory)


def judge_non_saturating(notes: tuple[float, float, float], theory: tuple[float, float, float]) -> Finding:
    """Holds when 20 SGD steps on the notes' loss raise E log D(G(z)) (what max_G E log D(G(z))
    asks) and move G's samples toward the data (its offset θ₁ up from −3). A G trained with the
    fake label would lower both. The theory's saturating form is reported beside it."""
    before, after, offset = notes
    ok = after > before and offset > -3.0
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"G(z) labelled real, 20 SGD steps on −mean log D(G(z)): E log D(G(z)) {before:.3f} → {after:.3f}, "
        f"G's offset −3 → {offset:.3f} "
        + ("(toward the data)" if ok else "(NOT toward the data)")
        + f"; the theory's min E log(1−D(G(z))) under the same steps: {theory[0]:.3f} → {theory[1]:.3f}, "
        f"offset → {theory[2]:.4f} (it saturates where D rejects the fakes)",
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
            reading="one optimizer per network, built on that network's parameters: each step moves only "
            "its own network, and G's step uses the G loss's gradient",
        ),
        Claim(
            "expectation_gradient",
            "观察到对 f(x) 期望的梯度等于对f(x)自身的梯度",
            "004",
            ClaimKind.CORRECTNESS,
            reading="∇θ E f(x) is the expectation of ∇θ f at the samples (also where the samples are "
            "G's, x = G_θ(z)), so a minibatch of per-sample gradients estimates it without bias",
        ),
        Claim(
            "d_losses",
            "Theoretically : $\\max\\limits_{D}  E_{x}[\\log D(x)] + E_{z}[\\log (1-D(G(z)))]$ … "
            "$loss_{real} = -\\sum\\limits_{i=1}^{batch}log(D(x^i))$----------标签为real label … "
            "$loss_{fake} = -\\sum\\limits_{i=1}^{batch}log(1-D(G(z^{i})))$----------标签为fake label",
            "004",
            ClaimKind.CORRECTNESS,
            reading="minimising loss_real (real label) + loss_fake (fake label) trains D to the theory's "
            "max_D: D*(x) = p_data/(p_data + p_g)",
        ),
        Claim(
            "g_loss",
            "$\\max\\limits_{G}E_z [logD(G(z))]$ … NN中最小化将G(z)的标签全部设置为real, 最小化损失 "
            "$loss = -\\sum\\limits_{i=1}^{batch}log(D(G(z^{i})))$",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="minimising −Σ log D(G(z)) with G(z) labelled real raises E log D(G(z)): G moves "
            "toward what D takes for data",
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
