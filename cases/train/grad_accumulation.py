"""Gradient accumulation over k micro-batches vs one big batch, and where zero_grad goes
(notes 004 `MinibatchAccumulation`, 000/001 "zero_grad 只需要运行一次即可").

With a mean-reduced loss, the big batch's gradient is the mean of the micro-batch gradients, so each
micro-batch loss must be divided by k before ``backward`` (gradients add up in ``.grad``). The
notes' loop does not divide: with a mean-reduced criterion (torch's default) its accumulated
gradient is k× the big batch's, with a sum-reduced one it is the big batch's. For SGD k× is a k×
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
from notes import parse

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


# notes 004's MinibatchAccumulation, read from the note as written.
NOTES_SOURCE = parse.snippet("004#23").source
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


def accumulate(net, x, y, scale: bool, reduction: str = "mean"):
    """The notes' MinibatchAccumulation with its two slips fixed, on a criterion of the given
    reduction; `scale`: each micro-batch loss divided by k (the advice, not the notes' code)."""

    def criterion(out, target):
        loss = nn.functional.mse_loss(out, target, reduction=reduction)
        return loss / K if scale else loss

    error = _run_notes(NOTES_FIXED_SOURCE, net, x, y, criterion)
    assert not error, f"the fixed notes' function should run: {error}"
    return _grads(net)


def big_batch_grad_sum_float64(net, x, y):
    ref = _copy(net).double()
    nn.functional.mse_loss(ref(x.double()), y.double(), reduction="sum").backward()
    return _grads(ref)


def check_accumulated_equals_big_batch(device):
    net, x, y = _setup(device)
    # The notes' loop as written (slips fixed, no /k) on a sum-reduced and on a mean-reduced (torch's
    # default) criterion, each against one backward over the whole batch with the same criterion.
    truth_sum = big_batch_grad_sum_float64(net, x, y)
    as_written_sum = accumulate(_copy(net), x, y, scale=False, reduction="sum").double()
    sum_close = measure.within_tol(as_written_sum, truth_sum, ACCUMULATED_TOL).within
    truth = big_batch_grad_float64(net, x, y)
    as_written_mean = accumulate(_copy(net), x, y, scale=False).double()
    mean_close = measure.within_tol(as_written_mean, truth, ACCUMULATED_TOL).within
    ratio = (as_written_mean.norm() / truth.norm()).item()
    # The advice: a mean-reduced loss divided by k.
    scaled = accumulate(_copy(net), x, y, scale=True).double()
    scaled_close = measure.within_tol(scaled, truth, ACCUMULATED_TOL).within
    # The notes' function with only its parameter renamed: the call slip alone.
    renamed = NOTES_SOURCE.replace("epochoptimizer", "optimizer")
    call_error = _run_notes(renamed, _copy(net), x, y, nn.functional.mse_loss)
    return judge_accumulated(sum_close, mean_close, ratio, scaled_close, call_error)


# The mean-reduced accumulation is k× the big batch's up to fp32 rounding (~u·√terms ≈ 1e-6
# relative): 1e-3 is far above that and far below a step of 1/k = 0.25 in the multiple.
RATIO_TOL = 1e-3


def judge_accumulated(
    sum_close: bool, mean_close: bool, mean_ratio: float, scaled_close: bool, call_error: str
) -> Finding:
    """The notes' MinibatchAccumulation, as written (two slips fixed): zero_grad, a backward per
    micro-batch, one step. Its accumulated gradient is the big batch's when the criterion sums over
    samples (within `ACCUMULATED_TOL` of float64); with a mean-reduced criterion, torch's default,
    it is k× the big batch's. Holds where both equal the big batch's; depends (on the criterion's
    reduction) where the sum does and the mean gives exactly k×; fails otherwise. The call slip,
    criterion(net(x, y)), is a typo (the name slip `epochoptimizer` is the snippet check's)."""
    errata = ()
    if call_error:
        errata = (Erratum(ErratumKind.TYPO, "loss = criterion(net(traindata[i],labels[i]))", call_error),)
    k_times = abs(mean_ratio - K) < RATIO_TOL * K
    if sum_close and mean_close:
        verdict = Verdict.HOLDS
    elif sum_close and k_times:
        verdict = Verdict.DEPENDS
    else:
        verdict = Verdict.FAILS
    return Finding(
        verdict,
        "the notes' loop (slips fixed, no /k): accumulated grad "
        + ("equals" if sum_close else "does NOT equal")
        + " the big batch's with a sum-reduced criterion; with a mean-reduced one (torch's default) it is "
        f"{mean_ratio:.4f}× the big batch's for k={K}"
        + (": depends on the criterion's reduction" if verdict is Verdict.DEPENDS else "")
        + "; advice: with a mean-reduced criterion divide each micro-batch loss by k, which "
        + ("gives the big batch's gradient" if scaled_close else "does NOT give the big batch's gradient"),
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
    """The notes' "optimizer 的 zero_grad 只需要运行一次即可", read as written: running zero_grad
    once is enough. Once for the whole run, step 2 sees g1 + g2 (`once_per_run_rel`, relative to
    g2): fails where it does, with once per optimizer step (each step's own gradient,
    `per_step_err` relative to the gradients' largest entry) as the advice where that is right;
    holds only where running it once leaves no stale gradient."""
    # The same kernels on the same parameters and batch: bit-equal expected; 4u admits one rounding
    # in another order, while a step that kept the previous batch's gradient is O(1) off.
    per_step = per_step_err <= 4 * U32
    per_run = once_per_run_rel <= 4 * U32
    verdict = Verdict.HOLDS if per_run else Verdict.FAILS
    return Finding(
        verdict,
        "zero_grad once per optimizer step: each step's grad "
        + ("equals" if per_step else "does NOT equal")
        + f" a fresh copy's (max err {per_step_err:.2g} of its largest entry); zero_grad once for the whole "
        f"run: step 2 uses g1+g2 (rel. error {once_per_run_rel:.2f} vs g2)"
        + (
            "; run once, it leaves a stale gradient: call it once per optimizer step"
            if verdict is Verdict.FAILS and per_step
            else ""
        )
        + ". zero_grad() "
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
            "def MinibatchAccumulation(traindata,labels,epochoptimizer,criterion,net):\n"
            "    optimizer.zero_grad()\n    for i in range(len(traindata)):\n"
            "        loss = criterion(net(traindata[i],labels[i]))\n        loss.backward()\n"
            "    optimizer.step()",
            "004",
            ClaimKind.CORRECTNESS,
            reading="the notes' loop (zero_grad, a backward per micro-batch, one step; its two slips fixed) "
            "accumulates the big batch's gradient",
        ),
        Claim(
            "zero_grad_once",
            "optimizer 的 zero_grad 只需要运行一次即可",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="running optimizer.zero_grad() once is enough (as written: once, not once per "
            "step); judged by training two steps with it run once",
        ),
    ),
    checks={
        "accumulated_equals_big_batch": Check(check_accumulated_equals_big_batch, claim="accumulation"),
        # What forgetting /k costs per optimizer: the catalogue's addition, context.
        "optimizer_sensitivity": Check(check_optimizer_sensitivity),
        "zero_grad_placement": Check(check_zero_grad_placement, claim="zero_grad_once"),
    },
)
