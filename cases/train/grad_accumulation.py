"""Gradient accumulation over k micro-batches vs one big batch, and where zero_grad goes
(notes 004 `MinibatchAccumulation`, 000/001 "zero_grad 只需要运行一次即可").

With a mean-reduced loss, the big batch's gradient is the mean of the micro-batch gradients, so each
micro-batch loss must be divided by k before ``backward`` (gradients add up in ``.grad``). The
notes' loop does not divide: its accumulated gradient is k× the big batch's. For SGD that is a k×
learning rate; Adam normalises by √v and barely notices (up to eps).
"""

from __future__ import annotations

import torch
from torch import nn

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict

K, MICRO, D_IN = 4, 8, 10


def _setup(device, seed=0):
    g = torch.Generator().manual_seed(seed)
    torch_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(D_IN, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    torch.random.set_rng_state(torch_state)
    x = torch.randn(K * MICRO, D_IN, generator=g).to(device)
    y = torch.randn(K * MICRO, 1, generator=g).to(device)
    return net, x, y


def _grads(net):
    return torch.cat([p.grad.flatten() for p in net.parameters()])


def big_batch_grad_float64(net, x, y):
    """The truth: one backward over the whole batch, in float64."""
    ref = _copy(net).double()
    nn.functional.mse_loss(ref(x.double()), y.double()).backward()
    return _grads(ref)


def _copy(net):
    import copy

    return copy.deepcopy(net)


def accumulate(net, x, y, scale: bool):
    """The notes' MinibatchAccumulation, with its slip fixed (`criterion(net(x_i), y_i)`, not
    `criterion(net(x_i, y_i))`) and an optional 1/k on each micro-batch loss."""
    net.zero_grad()
    for xi, yi in zip(x.split(MICRO), y.split(MICRO)):
        loss = nn.functional.mse_loss(net(xi), yi)
        (loss / K if scale else loss).backward()
    return _grads(net)


def check_accumulated_equals_big_batch(device):
    net, x, y = _setup(device)
    truth = big_batch_grad_float64(net, x, y)
    scaled = accumulate(_copy(net), x, y, scale=True).double()
    # k·K-term fp32 sums against float64: u·√terms ≈ 1e-6 relative; 1e-5 leaves the order of
    # summation room, while a missed or doubled micro-batch is off by 1/k = 25%.
    close = torch.allclose(scaled, truth, rtol=1e-5, atol=1e-6)
    unscaled = accumulate(_copy(net), x, y, scale=False).double()
    ratio = (unscaled.norm() / truth.norm()).item()
    assert abs(ratio - K) < 1e-4, f"unscaled accumulation should be {K}× the big-batch gradient, got {ratio}"
    # The slip in the notes' call: net(x_i, y_i) passes the label to forward.
    try:
        nn.functional.mse_loss(net(x[:MICRO], y[:MICRO]))
        call_error = ""
    except TypeError as exc:
        call_error = f"TypeError ({exc})"
    err = (scaled - truth).abs().max().item()
    return judge_accumulated(close, err, ratio, call_error)


def judge_accumulated(close: bool, err: float, unscaled_ratio: float, call_error: str) -> Finding:
    """The technique: k micro-batches of loss/k accumulate to the big batch's mean-loss gradient
    (`close`: within rtol 1e-5 of float64). The notes
    never say their loop (no /k) equals the big batch, so its k× is context, not a failure; the
    call criterion(net(x, y)) and the parameter `epochoptimizer` beside the body's `optimizer` are
    typos."""
    errata = (
        Erratum(
            ErratumKind.TYPO,
            "def MinibatchAccumulation(traindata,labels,epochoptimizer,criterion,net)",
            "the body calls optimizer.zero_grad()/step(): `epochoptimizer` is never used",
        ),
    )
    if call_error:
        errata += (Erratum(ErratumKind.TYPO, "loss = criterion(net(traindata[i],labels[i]))", call_error),)
    return Finding(
        Verdict.HOLDS if close else Verdict.FAILS,
        f"with loss/k the accumulated grad equals the big-batch grad (max err {err:.2g} vs float64); "
        f"without /k (the notes' loop) it is {unscaled_ratio:.4f}× it for k={K}, the sum of the "
        "micro-batch means",
        errata,
    )


def _one_update(net, x, y, opt_cls, scale, **opt_kw):
    net = _copy(net)
    opt = opt_cls(net.parameters(), **opt_kw)
    accumulate(net, x, y, scale)
    opt.step()
    return torch.cat([p.detach().flatten() for p in net.parameters()]).double()


def check_optimizer_sensitivity(device):
    net, x, y = _setup(device, seed=1)
    before = torch.cat([p.detach().flatten() for p in net.parameters()]).double()
    out = {}
    for name, cls, kw in (("SGD", torch.optim.SGD, {"lr": 0.1}), ("Adam", torch.optim.Adam, {"lr": 1e-3})):
        step_scaled = _one_update(net, x, y, cls, True, **kw) - before
        step_unscaled = _one_update(net, x, y, cls, False, **kw) - before
        out[name] = ((step_unscaled - step_scaled).norm() / step_scaled.norm()).item()
    assert abs(out["SGD"] - (K - 1)) < 1e-3, f"SGD step should be {K}× too large, rel diff {out['SGD']}"
    assert out["Adam"] < 1e-3, (
        f"Adam's first step should be scale-invariant up to eps, rel diff {out['Adam']}"
    )
    sgd_off, adam_off = out["SGD"] > 1e-3, out["Adam"] > 1e-3
    # Context: what forgetting /k costs, by optimizer (the notes name none).
    return Finding(
        None,
        f"forgetting /k ({'matters' if sgd_off else 'does not matter'} for SGD, "
        f"{'matters' if adam_off else 'does not matter'} for Adam): SGD's step is "
        f"{out['SGD'] + 1:.3f}× too large (rel diff {out['SGD']:.3f}); Adam's first step differs by "
        f"{out['Adam']:.2g} (scale-invariant up to eps)",
    )


def check_zero_grad_placement(device):
    net, x, y = _setup(device, seed=2)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)  # lr 0: parameters fixed, only .grad changes
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters()), "fresh parameters have no grad"
    halves = list(zip(x.split(K * MICRO // 2), y.split(K * MICRO // 2)))
    per_step = []
    for xi, yi in halves:
        opt.zero_grad()
        nn.functional.mse_loss(net(xi), yi).backward()
        per_step.append(_grads(net).clone())
        opt.step()
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters()), "zero_grad() should set grads to None by default"
    opt.zero_grad(set_to_none=False)  # no grads yet: stays None
    # zero_grad only once, before the loop: step 2 sees g1 + g2.
    for xi, yi in halves:
        nn.functional.mse_loss(net(xi), yi).backward()
        opt.step()
    stale = _grads(net)
    torch.testing.assert_close(stale, per_step[0] + per_step[1], rtol=1e-6, atol=1e-7)
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.count_nonzero() == 0 for p in net.parameters())
    rel = ((stale - per_step[1]).norm() / per_step[1].norm()).item()
    return Finding(
        # The notes zero once per accumulation cycle, before its backwards: needed exactly when
        # gradients left from the previous step would otherwise add in.
        Verdict.HOLDS if rel > 1e-3 else Verdict.FAILS,
        f"zero_grad once per optimizer step, as the notes place it, is required: called only once per "
        f"run, step 2 uses g1+g2 (rel. error {rel:.2f} vs g2). zero_grad() sets grads to None by "
        "default (set_to_none=True); set_to_none=False leaves zeros",
    )


CASE = Case(
    id="train.grad_accumulation",
    tier=3,
    claim="Accumulating gradients over micro-batches (MinibatchAccumulation: zero_grad, k× backward, step) "
    "is the same as one big batch; zero_grad only needs to run once.",
    source="004 MinibatchAccumulation, 000/001 Auto-grad",
    checks={
        "accumulated_equals_big_batch": Check(check_accumulated_equals_big_batch),
        "optimizer_sensitivity": Check(check_optimizer_sensitivity),
        "zero_grad_placement": Check(check_zero_grad_placement),
    },
)
