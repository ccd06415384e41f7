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

from cases.spec import (
    UNIT_ROUNDOFF,
    Case,
    Check,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    Tol,
    Verdict,
)
from harness import measure

K, MICRO, D_IN = 4, 8, 10
U32 = UNIT_ROUNDOFF[torch.float32]
# A weight's gradient sums K·MICRO = 32 samples' products that went through reductions of D_IN = 10
# and 16 terms: each adds ~u·√terms of the terms' scale (≈ max|grad|) to small entries and large alike,
# so a floor of 2u·(√32 + √16 + √10) = 26u of max|grad|, and 8u relative for the last roundings. A
# missed or doubled micro-batch is off by 1/K = 25%.
ACCUMULATED_TOL = Tol(rtol=8 * U32, floor=2 * U32 * (32**0.5 + 16**0.5 + 10**0.5))


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


# notes 004, as written.
NOTES_SOURCE = """\
def MinibatchAccumulation(traindata,labels,epochoptimizer,criterion,net):
    optimizer.zero_grad()
    for i in range(len(traindata)):
        loss = criterion(net(traindata[i],labels[i]))
        loss.backward()
    optimizer.step()
"""
NOTES_FIXED_SOURCE = NOTES_SOURCE.replace("epochoptimizer", "optimizer").replace(
    "criterion(net(traindata[i],labels[i]))", "criterion(net(traindata[i]),labels[i])"
)


def _notes_function(source: str):
    namespace: dict = {}
    exec(compile(source, "<notes 004>", "exec"), namespace)
    return namespace["MinibatchAccumulation"]


def _run_notes(source: str, net, x, y, criterion) -> str:
    """Call the notes' function on k micro-batches with an lr-0 SGD (parameters stay, the
    accumulated .grad is left to read); the exception it raises, or ''."""
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    try:
        _notes_function(source)(x.split(MICRO), y.split(MICRO), opt, criterion, net)
    except (NameError, TypeError) as exc:
        return f"{type(exc).__name__} ({exc})"
    return ""


def accumulate(net, x, y, scale: bool):
    """The notes' MinibatchAccumulation with its two slips fixed, the loss divided by k or not."""

    def criterion(out, target):
        loss = nn.functional.mse_loss(out, target)
        return loss / K if scale else loss

    error = _run_notes(NOTES_FIXED_SOURCE, net, x, y, criterion)
    assert not error, f"the fixed notes' function should run: {error}"
    return _grads(net)


def check_accumulated_equals_big_batch(device):
    net, x, y = _setup(device)
    truth = big_batch_grad_float64(net, x, y)
    scaled = accumulate(_copy(net), x, y, scale=True).double()
    close = measure.within_tol(scaled, truth, ACCUMULATED_TOL).within
    unscaled = accumulate(_copy(net), x, y, scale=False).double()
    ratio = (unscaled.norm() / truth.norm()).item()
    # The notes' function as written, then with only its parameter renamed.
    as_written = _run_notes(NOTES_SOURCE, _copy(net), x, y, nn.functional.mse_loss)
    renamed = NOTES_SOURCE.replace("epochoptimizer", "optimizer")
    call_error = _run_notes(renamed, _copy(net), x, y, nn.functional.mse_loss)
    name_error = as_written if as_written.startswith("NameError") else ""
    err = (scaled - truth).abs().max().item()
    return judge_accumulated(close, err, ratio, call_error, name_error)


def judge_accumulated(
    close: bool, err: float, unscaled_ratio: float, call_error: str, name_error: str
) -> Finding:
    """The technique: k micro-batches of loss/k accumulate to the big batch's mean-loss gradient
    (`close`: within `ACCUMULATED_TOL` of float64). The notes never say their loop (no /k) equals the big
    batch, so its k× is context, not a failure. The slips that stop their function running as
    written (the parameter `epochoptimizer` beside the body's `optimizer`, the call
    criterion(net(x, y))) are typos."""
    errata = ()
    if name_error:
        errata += (
            Erratum(
                ErratumKind.TYPO,
                "def MinibatchAccumulation(…,epochoptimizer,…): optimizer.zero_grad()",
                f"{name_error}: the parameter is `epochoptimizer`, the body uses `optimizer`",
            ),
        )
    if call_error:
        errata += (Erratum(ErratumKind.TYPO, "loss = criterion(net(traindata[i],labels[i]))", call_error),)
    return Finding(
        Verdict.HOLDS if close else Verdict.FAILS,
        "the notes' loop (slips fixed) with loss/k: accumulated grad "
        + ("equals" if close else "does NOT equal")
        + f" the big-batch grad (max err {err:.2g} vs float64); without /k, as the notes write it, it is "
        f"{unscaled_ratio:.4f}× it for k={K}, the sum of the micro-batch means (the notes never claim "
        "equality: context)",
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
    return judge_optimizer_sensitivity(out["SGD"], out["Adam"])


def judge_optimizer_sensitivity(sgd_rel: float, adam_rel: float) -> Finding:
    """What forgetting /k costs, by optimizer (the notes name none: context). SGD's step is linear
    in the gradient, so the unscaled step is K× the scaled one: relative difference K − 1, up to the
    two accumulations' fp32 rounding (~u·√terms, 1e-6 relative; 1e-3 is 10³ above that and 10³ below
    the next integer factor). Adam's first step is lr·g/(|g| + eps): scaling g by K moves it by
    ≤ eps/|g| relative, under 1e-3 for every |g| above 1e-5 (eps = 1e-8). Holds when both show."""
    sgd_k = abs(sgd_rel - (K - 1)) < 1e-3
    adam_invariant = adam_rel < 1e-3
    return Finding(
        Verdict.HOLDS if sgd_k and adam_invariant else Verdict.FAILS,
        f"forgetting /k: SGD's step is {sgd_rel + 1:.3f}× too large (rel diff {sgd_rel:.3f}; "
        + (f"{K}× as linearity says" if sgd_k else f"NOT the {K}× linearity says")
        + f"); Adam's first step differs by {adam_rel:.2g} ("
        + ("scale-invariant up to eps" if adam_invariant else "NOT scale-invariant")
        + ")",
    )


def check_zero_grad_placement(device):
    net, x, y = _setup(device, seed=2)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)  # lr 0: parameters fixed, only .grad changes
    halves = list(zip(x.split(K * MICRO // 2), y.split(K * MICRO // 2)))
    fresh = []  # the truth: each step's gradient on a copy that never saw another batch
    for xi, yi in halves:
        ref = _copy(net)
        nn.functional.mse_loss(ref(xi), yi).backward()
        fresh.append(_grads(ref).clone())
    per_step = []
    for xi, yi in halves:  # as the notes place it: zero_grad once per optimizer step
        opt.zero_grad()
        nn.functional.mse_loss(net(xi), yi).backward()
        per_step.append(_grads(net).clone())
        opt.step()
    err = max(((got - want).abs().max() / want.abs().max()).item() for got, want in zip(per_step, fresh))
    opt.zero_grad()
    default_none = all(p.grad is None for p in net.parameters())
    # Context: zero_grad only once before the run, step 2 sees g1 + g2.
    for xi, yi in halves:
        nn.functional.mse_loss(net(xi), yi).backward()
        opt.step()
    stale = _grads(net)
    rel = ((stale - fresh[1]).norm() / fresh[1].norm()).item()
    return judge_zero_grad_placement(err, rel, default_none)


def judge_zero_grad_placement(per_step_err: float, once_per_run_rel: float, default_none: bool) -> Finding:
    """The notes' "zero_grad 只需要运行一次即可", as their MinibatchAccumulation places it: once per
    optimizer step, each step then sees its own gradient (the same code on the same batch:
    `per_step_err` is relative to the gradients' largest entry). A single zero_grad for the whole
    run, which the notes never write, is reported as context."""
    # The same kernels on the same parameters and batch: bit-equal expected; 4u admits one rounding
    # in another order, while a step that kept the previous batch's gradient is O(1) off.
    holds = per_step_err <= 4 * U32
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"zero_grad once per optimizer step: each step's grad equals a fresh copy's (max err "
        f"{per_step_err:.2g} of its largest entry); context: zero_grad only once per run, step 2 uses "
        f"g1+g2 (rel. error {once_per_run_rel:.2f} vs g2). zero_grad() "
        + ("sets grads to None by default (set_to_none=True)" if default_none else "leaves zero tensors"),
    )


CASE = Case(
    id="train.grad_accumulation",
    tier=3,
    claim="Accumulating gradients over k micro-batches (MinibatchAccumulation: zero_grad, k× backward, step) "
    "with each loss divided by k gives the big batch's gradient; zero_grad runs once per optimizer step.",
    source="004 MinibatchAccumulation, 000/001 Auto-grad",
    claims=(
        Claim(
            "accumulation",
            "def MinibatchAccumulation(traindata,labels,epochopt"
            "imizer,criterion,net):\n    optimizer.zero_grad()\n"
            "    for i in range(len(traindata)): ... loss.backward()\n    optimizer.step()",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim("zero_grad_once", "optimizer 的 zero_grad 只需要运行一次即可", "001", ClaimKind.BEHAVIOUR),
    ),
    checks={
        "accumulated_equals_big_batch": Check(check_accumulated_equals_big_batch, claim="accumulation"),
        # What forgetting /k costs per optimizer: the catalogue's addition, context.
        "optimizer_sensitivity": Check(check_optimizer_sensitivity),
        "zero_grad_placement": Check(check_zero_grad_placement, claim="zero_grad_once"),
    },
)
