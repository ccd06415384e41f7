"""Train vs eval mode: Dropout, Dropout2d, BatchNorm running statistics, the default mode
(notes 001 "dropout", "BatchNorm2d"; 003 杂录).

Every expected number is computed here by hand in float64 from the batch values, not read back
from the module under test.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _forked(device):
    """Dropout draws from the global generator: fork it so a check leaves no trace on it."""
    return torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])


def check_dropout_scale(device):
    with _forked(device):
        torch.manual_seed(0)
        return _dropout_scale(device)


def _dropout_scale(device):
    p = 0.3
    model = nn.Sequential(nn.Dropout(p))  # the notes' example
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], device=device)
    model.train()
    out = model(x)
    scaled = x / (1 - p)
    kept = out != 0
    torch.testing.assert_close(out[kept], scaled[kept], rtol=1e-6, atol=0)
    # The notes' printed values are x/(1−p) rounded to 4 decimals.
    notes = torch.tensor([2.8571, 4.2857, 5.7143, 7.1429])
    torch.testing.assert_close(scaled[1:].cpu(), notes, rtol=0, atol=5e-5)
    # Drop rate over many elements: binomial, 6σ bound.
    n = 200_000
    big = torch.rand(n, generator=_gen(1)).add_(0.5).to(device)
    out = model(big)
    dropped = (out == 0).double().mean().item()
    assert abs(dropped - p) < 6 * math.sqrt(p * (1 - p) / n), f"dropped fraction {dropped:.4f}, expected {p}"
    nz = out != 0
    torch.testing.assert_close(out[nz], big[nz] / (1 - p), rtol=1e-6, atol=0)
    mean_ratio = (out.double().mean() / big.double().mean()).item()
    model.eval()
    assert torch.equal(model(big), big), "eval-mode dropout should be the identity"
    return Finding(
        Verdict.HOLDS,
        f"train: kept values are x/(1−p) = x·{1 / (1 - p):.6f} (notes' 2.8571…7.1429 reproduced), "
        f"{dropped:.4f} of {n} dropped for p={p}, E[out]/E[x] = {mean_ratio:.4f}; eval: identity (bit-exact)",
    )


def check_dropout2d_channels(device):
    p, (n, c, h, w) = 0.5, (4, 16, 5, 6)
    x = torch.rand(n, c, h, w, generator=_gen(2)).add_(0.5).to(device)
    with _forked(device):
        torch.manual_seed(3)
        out = nn.Dropout2d(p).train()(x)
    zero = out == 0
    plane_zero = zero.all(dim=(2, 3))
    plane_any = zero.any(dim=(2, 3))
    assert torch.equal(plane_zero, plane_any), "Dropout2d should zero whole (n, c) planes or none of them"
    kept = ~zero
    torch.testing.assert_close(out[kept], x[kept] / (1 - p), rtol=1e-6, atol=0)
    dropped_planes = int(plane_zero.sum())
    # The notes: "zeroes all channels at one position". Observed: a position keeps some channels.
    positions_all_zero = int(zero.all(dim=1).sum())
    positions_mixed = int((zero.any(dim=1) & ~zero.all(dim=1)).sum())
    return judge_dropout2d(
        0 < dropped_planes < n * c,
        positions_mixed,
        positions_all_zero,
        f"Dropout2d zeroes whole channels (each of {n}×{c} H×W planes all-zero or all ×{1 / (1 - p):g}; "
        f"{dropped_planes} dropped)",
        n * h * w,
    )


def judge_dropout2d(whole_planes: bool, positions_mixed: int, positions_all_zero: int, evidence, positions):
    """The technique: Dropout2d drops whole channels (the plane check above asserted each plane is
    all-zero or all scaled; some but not all were dropped). The notes' "一个位置处的所有通道全部置 0"
    (all channels at one position) is a wrong statement where positions keep some channels."""
    errata = ()
    if positions_mixed:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "nn.Dropout2d 是将输入中的一个位置处的所有通道全部置 0",
                f"{positions_mixed}/{positions} positions have some channels zeroed and others kept, "
                f"{positions_all_zero} all-zero: it zeroes whole channels",
            ),
        )
    return Finding(Verdict.HOLDS if whole_planes else Verdict.FAILS, evidence, errata)


def _bn_by_hand(batches, momentum, eps=1e-5):
    """Running mean/var in float64: r ← (1−m)·r + m·stat, var unbiased (n/(n−1)); m=None → 1/k."""
    mean, var = (
        torch.zeros(batches[0].shape[1], dtype=torch.float64),
        torch.ones(batches[0].shape[1], dtype=torch.float64),
    )
    for k, b in enumerate(batches, start=1):
        b = b.double().transpose(0, 1).flatten(1)  # (C, N·H·W)
        m = 1.0 / k if momentum is None else momentum
        mean = (1 - m) * mean + m * b.mean(1)
        var = (1 - m) * var + m * b.var(1, unbiased=True)
    return mean, var


def check_batchnorm_running_stats(device):
    g = _gen(4)
    batches = [torch.randn(8, 3, 4, 4, generator=g).mul_(s).add_(s) for s in (2.0, 0.5)]
    results = {}
    for momentum in (0.1, None):
        bn = nn.BatchNorm2d(3, momentum=momentum).to(device)
        assert bn.training, "a new module should start in train mode"
        for b in batches:
            out = bn(b.to(device))
        mean, var = _bn_by_hand(batches, momentum)
        torch.testing.assert_close(bn.running_mean.double().cpu(), mean, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(bn.running_var.double().cpu(), var, rtol=1e-5, atol=1e-6)
        assert int(bn.num_batches_tracked) == 2
        results[momentum] = (mean, var)
        # Train-mode output is normalised with the *biased* batch variance.
        last = batches[-1].double()
        bm, bv = last.mean((0, 2, 3), keepdim=True), last.var((0, 2, 3), unbiased=False, keepdim=True)
        torch.testing.assert_close(
            out.double().cpu(), (last - bm) / torch.sqrt(bv + bn.eps), rtol=1e-4, atol=1e-5
        )
        # Eval uses the running statistics.
        bn.eval()
        x = batches[0].to(device)
        expect = (batches[0].double() - mean.view(1, 3, 1, 1)) / torch.sqrt(var.view(1, 3, 1, 1) + bn.eps)
        torch.testing.assert_close(bn(x).double().cpu(), expect, rtol=1e-4, atol=1e-5)
    m01, m_none = results[0.1], results[None]
    # momentum=None is the plain average of the two batches' statistics.
    avg_mean = (batches[0].double().mean((0, 2, 3)) + batches[1].double().mean((0, 2, 3))) / 2
    torch.testing.assert_close(m_none[0], avg_mean, rtol=1e-12, atol=1e-12)
    n = 8 * 4 * 4
    return Finding(
        Verdict.HOLDS,
        f"after two batches, momentum 0.1: running_mean {[round(v, 4) for v in m01[0].tolist()]}, "
        f"running_var {[round(v, 4) for v in m01[1].tolist()]} (unbiased, ×{n}/{n - 1}), equal to the hand "
        f"computation; momentum=None gives the cumulative average; train normalises with the biased batch "
        f"var, eval with the running stats",
    )


def check_default_mode(device):
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(2)))
    assert all(m.training for m in net.modules()), "a new module should start in train mode"
    net.eval()
    assert not any(m.training for m in net.modules()), "eval() should reach every submodule"
    net.train()
    assert all(m.training for m in net.modules())
    net[1].eval()
    assert net.training and not net[1][0].training, "eval() on a child leaves the parent in train mode"
    return Finding(
        Verdict.HOLDS,
        "new modules start with training=True; eval()/train() recurse into all "
        "5 submodules; eval() on a child does not change the parent",
    )


CASE = Case(
    id="train.modes",
    tier=3,
    claim="Dropout zeroes with probability p and scales the rest by 1/(1−p) in train mode, is the identity "
    "in eval; Dropout2d zeroes all channels at a position; BatchNorm updates running stats with momentum; "
    "modules start in train mode.",
    source="001 dropout / BatchNorm2d, 003 杂录",
    checks={
        "dropout_scale": Check(check_dropout_scale),
        "dropout2d_channels": Check(check_dropout2d_channels),
        "batchnorm_running_stats": Check(check_batchnorm_running_stats),
        "default_mode": Check(check_default_mode, devices=("cpu",)),
    },
)
