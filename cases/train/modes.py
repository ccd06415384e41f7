"""Train vs eval mode: Dropout, Dropout2d, BatchNorm running statistics, the default mode
(notes 001 "dropout", "BatchNorm2d"; 003 杂录).

Every expected number is computed here by hand in float64 from the batch values, not read back
from the module under test.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cases.spec import UNIT_ROUNDOFF, Case, Check, Claim, ClaimKind, Finding, Verdict

U32 = UNIT_ROUNDOFF[torch.float32]
# A kept value is x·fl(1/(1−p)), the reference x/fl(1−p): ≤ 4 roundings of u apart, ×2 margin;
# a scale off by one ulp of fp16 (5e-4) is 8000u outside.
KEPT_RTOL = 8 * U32


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _forked(device):
    """Dropout draws from the global generator: fork it so a check leaves no trace on it."""
    return torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])


def check_dropout_scale(device):
    with _forked(device):
        torch.manual_seed(0)
        observed = _dropout_scale(device)
    return judge_dropout_scale(*observed)


def _dropout_scale(device):
    p = 0.3
    model = nn.Sequential(nn.Dropout(p))  # the notes' example
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], device=device)
    model.train()
    out = model(x)
    scaled = x / (1 - p)
    kept = out != 0
    # The notes' printed values are x/(1−p) rounded to 4 decimals.
    notes = torch.tensor([2.8571, 4.2857, 5.7143, 7.1429])
    printed_err = (scaled[1:].cpu() - notes).abs().max().item()
    # Drop rate over many elements.
    n = 200_000
    big = torch.rand(n, generator=_gen(1)).add_(0.5).to(device)
    big_out = model(big)
    dropped = (big_out == 0).double().mean().item()
    nz = big_out != 0
    kept_err = max(
        ((out[kept] - scaled[kept]) / scaled[kept]).abs().max().item(),
        ((big_out[nz] - big[nz] / (1 - p)) / (big[nz] / (1 - p))).abs().max().item(),
    )
    mean_ratio = (big_out.double().mean() / big.double().mean()).item()
    model.eval()
    eval_identity = torch.equal(model(big), big)
    return p, n, dropped, kept_err, printed_err, eval_identity, mean_ratio


def judge_dropout_scale(
    p: float,
    n: int,
    dropped: float,
    kept_err: float,
    printed_err: float,
    eval_identity: bool,
    mean_ratio: float,
) -> Finding:
    """003: in train mode each element is zeroed with probability p and the rest scaled by
    1/(1−p) (their printed 2.8571…7.1429 for p=0.3); in eval the input passes unchanged.
    The dropped fraction of n Bernoulli(p) draws is within 6σ of p; a kept value is within
    `KEPT_RTOL` of x/(1−p); the notes print 4 decimals."""
    sigma = math.sqrt(p * (1 - p) / n)
    # 6σ of a binomial fraction: a false alarm once in 5e8 runs, while p off by 0.01 is 9.8σ at n = 2e5.
    rate_ok = abs(dropped - p) < 6 * sigma
    # 4 printed decimals round by ≤ 5e-5; the values (< 8) carry 8u = 5e-7 of fp32 rounding, inside the
    # 7e-6 the largest rounding (4.3e-5, at 2.8571 and 7.1429) leaves below 5e-5.
    holds = rate_ok and kept_err <= KEPT_RTOL and printed_err < 5e-5 and eval_identity
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"train: kept values are x/(1−p) = x·{1 / (1 - p):.6f} within {kept_err:.2g} relative (the notes' "
        f"2.8571…7.1429 {'reproduced' if printed_err < 5e-5 else 'NOT reproduced'}, "
        f"off by {printed_err:.2g}), "
        f"{dropped:.4f} of {n} dropped for p={p} ({abs(dropped - p) / sigma:.1f}σ), E[out]/E[x] = "
        f"{mean_ratio:.4f}; eval: " + ("identity (bit-exact)" if eval_identity else "NOT the identity"),
    )


def check_dropout2d_channels(device):
    p, (n, c, h, w) = 0.5, (4, 16, 5, 6)
    x = torch.rand(n, c, h, w, generator=_gen(2)).add_(0.5).to(device)
    with _forked(device):
        torch.manual_seed(3)
        out = nn.Dropout2d(p).train()(x)
    zero = out == 0
    kept = ~zero
    scaled = torch.allclose(out[kept], x[kept] / (1 - p), rtol=KEPT_RTOL, atol=0)  # a product: relative
    # What the notes say is zeroed: all channels at one (n, h, w) position, i.e. zero.all(dim=1).
    positions_all_zero = int(zero.all(dim=1).sum())
    positions_mixed = int((zero.any(dim=1) & ~zero.all(dim=1)).sum())
    # What torch zeroes: a whole H×W plane of one (n, c) channel.
    plane_zero = zero.all(dim=(2, 3))
    whole_planes = torch.equal(plane_zero, zero.any(dim=(2, 3))) and scaled
    return judge_dropout2d(
        positions_mixed, positions_all_zero, n * h * w, int(plane_zero.sum()), n * c, whole_planes
    )


def judge_dropout2d(
    positions_mixed: int,
    positions_all_zero: int,
    positions: int,
    planes_zero: int,
    planes: int,
    whole_planes: bool,
) -> Finding:
    """The notes: Dropout2d "将输入中的一个位置处的所有通道全部置 0" — zeroes all channels at one
    position. Holds where every (n, h, w) position is either zeroed across all its channels or kept,
    and some are zeroed; fails where positions keep some channels and lose others. What it does
    instead (whole H×W planes of a channel zeroed, the rest scaled by 1/(1−p)) is the evidence."""
    holds = positions_mixed == 0 and positions_all_zero > 0
    instead = (
        f"it zeroes whole channels: {planes_zero} of {planes} H×W planes all-zero, the others all ×1/(1−p)"
        if whole_planes and 0 < planes_zero < planes
        else f"{planes_zero} of {planes} H×W planes all-zero, the others NOT all kept and scaled by 1/(1−p)"
    )
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{positions_mixed}/{positions} (n, h, w) positions have some channels zeroed and others kept, "
        f"{positions_all_zero} have all channels zeroed: "
        + ("all channels at a position go together" if holds else "NOT all channels at one position")
        + f"; {instead}"
        + ("" if holds else "; use Dropout2d to drop whole feature maps (channels), not positions"),
    )


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


# A BatchNorm output (x − μ)/σ: the variance's ≤ 131u relative error halves under the root, 66u =
# 4e-6 relative (×2.5: OUT_RTOL); the mean's ≤ 150u·|μ| lands as 150u·|μ|/σ = 9e-6 absolute (|μ| ≈ σ
# here; OUT_ATOL), on outputs of scale ~3. Unbiased for biased variance is 0.4% off: 400× outside.
OUT_RTOL, OUT_ATOL = 1e-5, 1e-5


def check_batchnorm_running_stats(device):
    g = _gen(4)
    batches = [torch.randn(8, 3, 4, 4, generator=g).mul_(s).add_(s) for s in (2.0, 0.5)]
    results, close, starts_training = {}, {}, True
    for momentum in (0.1, None):
        bn = nn.BatchNorm2d(3, momentum=momentum).to(device)
        starts_training &= bn.training
        for b in batches:
            out = bn(b.to(device))
        mean, var = _bn_by_hand(batches, momentum)
        tag = f"momentum={momentum}"
        # 128 values per channel, s·(z + 1) with ~84% positive (Σ|x| ≈ 1.17·|Σx|): an fp32 sum in any
        # order is off by ≤ 128u·Σ|x|, 150u = 9e-6 relative, and the variance's positive squares by
        # ≤ 131u; the momentum update adds 3u. atol is 5e-6 of the smallest statistic (0.21).
        close[f"{tag} running_mean"] = torch.allclose(
            bn.running_mean.double().cpu(), mean, rtol=1e-5, atol=1e-6
        )
        close[f"{tag} running_var (unbiased)"] = torch.allclose(
            bn.running_var.double().cpu(), var, rtol=1e-5, atol=1e-6
        )
        close[f"{tag} num_batches_tracked"] = int(bn.num_batches_tracked) == 2
        results[momentum] = (mean, var)
        # Train-mode output is normalised with the *biased* batch variance.
        last = batches[-1].double()
        bm, bv = last.mean((0, 2, 3), keepdim=True), last.var((0, 2, 3), unbiased=False, keepdim=True)
        close[f"{tag} train output (biased batch var)"] = torch.allclose(
            out.double().cpu(), (last - bm) / torch.sqrt(bv + bn.eps), rtol=OUT_RTOL, atol=OUT_ATOL
        )
        # Eval uses the running statistics.
        bn.eval()
        x = batches[0].to(device)
        expect = (batches[0].double() - mean.view(1, 3, 1, 1)) / torch.sqrt(var.view(1, 3, 1, 1) + bn.eps)
        close[f"{tag} eval output (running stats)"] = torch.allclose(
            bn(x).double().cpu(), expect, rtol=OUT_RTOL, atol=OUT_ATOL
        )
    # momentum=None is the plain average of the two batches' statistics.
    avg_mean = (batches[0].double().mean((0, 2, 3)) + batches[1].double().mean((0, 2, 3))) / 2
    # Both float64, two roundings apart (2u₆₄ = 2e-16); momentum 0.1's average is O(1) away.
    close["momentum=None is the cumulative average"] = torch.allclose(
        results[None][0], avg_mean, rtol=1e-12, atol=1e-12
    )
    m01 = results[0.1]
    numbers = (
        f"after two batches, momentum 0.1: running_mean {[round(v, 4) for v in m01[0].tolist()]}, "
        f"running_var {[round(v, 4) for v in m01[1].tolist()]} (unbiased, ×128/127)"
    )
    return judge_batchnorm(close, starts_training, numbers)


def judge_batchnorm(close: dict, starts_training: bool, numbers: str) -> Finding:
    """001's BatchNorm source: r ← (1−m)·r + m·stat with the unbiased batch variance, momentum=None
    a cumulative average; train normalises with the batch's biased variance, eval with the
    running statistics. Each against the float64 hand computation (fp32 statistics of 128 values:
    1e-5 relative)."""
    wrong = [name for name, ok in close.items() if not ok]
    holds = not wrong and starts_training
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{numbers}; "
        + (
            f"{len(close)} quantities equal the hand computation"
            if not wrong
            else f"NOT as computed: {wrong}"
        )
        + ("" if starts_training else "; a new BatchNorm2d is NOT in train mode"),
    )


def check_default_mode(device):
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.BatchNorm1d(2)))
    modules = list(net.modules())
    new_train = all(m.training for m in modules)
    net.eval()
    eval_reaches = not any(m.training for m in modules)
    net.train()
    train_reaches = all(m.training for m in modules)
    net[1].eval()
    child_only = net.training and not net[1][0].training
    return judge_default_mode(new_train, eval_reaches and train_reaches, child_only, len(modules))


def judge_default_mode(new_train: bool, recursive: bool, child_only: bool, n_modules: int) -> Finding:
    """003: "torch.nn.Module的默认模式为train"; eval()/train() reach every submodule."""
    holds = new_train and recursive and child_only
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"new modules {'start' if new_train else 'do NOT start'} with training=True; eval()/train() "
        f"{'recurse into' if recursive else 'do NOT reach'} all {n_modules} modules; eval() on a child "
        + ("leaves the parent in train mode" if child_only else "changes the parent"),
    )


CASE = Case(
    id="train.modes",
    tier=3,
    claim="Dropout zeroes with probability p and scales the rest by 1/(1−p) in train mode, is the identity "
    "in eval; Dropout2d zeroes whole channels (not, as the notes say, all channels at a position); "
    "BatchNorm updates running stats with momentum; "
    "modules start in train mode.",
    source="001 dropout / BatchNorm2d, 003 杂录",
    claims=(
        Claim(
            "dropout",
            "测试阶段: 直接将输入原封不动地输出 … "
            "训练阶段: 以`p`的概率将输入的分量置为0, 其余分量变为`1/(1-p)`倍 … "
            "# [0.0000, 2.8571, 4.2857, 5.7143, 7.1429]",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="nn.Dropout(p) zeroes each element with probability p and scales the rest by 1/(1−p) in "
            "train mode (the notes' p=0.3 example prints x/(1−p)), and is the identity in eval mode",
        ),
        Claim(
            "dropout2d",
            "nn.Dropout2d 是将输入中的一个位置处的所有通道全部置 0",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="Dropout2d zeroes, at a random spatial position, all the channels there (each (n, h, w) "
            "position all-zero across channels or kept)",
        ),
        Claim(
            "batchnorm",
            "记录运行时`running_mean`, `running_var`, `num_batches_tracked` "
            "作为测试阶段的 $\\mu$ 和 $\\sigma$"
            " … `forward` 时，传入`self.running_mean`, `self.running_var` 作为记录",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="BatchNorm2d updates running_mean/running_var (unbiased batch variance) with momentum, "
            "or as a cumulative average when momentum is None, counts num_batches_tracked, and eval "
            "normalises with them (train with the batch's own, biased, statistics)",
        ),
        Claim(
            "default_train",
            "`torch.nn.Module`的默认模式为**train**",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="a new module and all its submodules start with training=True; eval()/train() recurse",
        ),
    ),
    checks={
        "dropout_scale": Check(check_dropout_scale, claim="dropout"),
        "dropout2d_channels": Check(check_dropout2d_channels, claim="dropout2d"),
        "batchnorm_running_stats": Check(check_batchnorm_running_stats, claim="batchnorm"),
        "default_mode": Check(check_default_mode, devices=("cpu",), claim="default_train"),
    },
)
