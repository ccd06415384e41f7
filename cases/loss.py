"""Cross-entropy: class indices vs class probabilities vs log_softmax + nll (note 004, Loss函数).

The notes quote the documentation: "performance is generally better when target contains class
indices". With indices the loss reads one logit per row (N gathers) beside the log-sum-exp; with
probabilities it multiplies the whole (N, C) log-softmax by the (N, C) target and reduces it: one
more N·C read, and a target N·C times larger to store and move. Each variant is timed forward +
backward (how a loss is used), returning (loss, dloss/dlogits).

The equivalences are not total, and the checks pin down where they stop: `weight` under
reduction='mean' divides by Σ w[y_n] with indices but by N with probabilities; `ignore_index`
exists only for indices; label smoothing equals a smoothed probability target.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cases._lib.inputs import generator
from cases._lib.timing import judge_faster, timed_claim
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    library,
    naive,
    optimized,
)
from harness.contract.rules import Faster

FP32, BF16 = torch.float32, torch.bfloat16


def make_logits(size, dtype, device, seed):
    g = generator(device, seed)
    n, c = size["n"], size["c"]
    logits = (3 * torch.randn(n, c, generator=g, device=device)).to(dtype)
    target = torch.randint(0, c, (n,), generator=g, device=device)
    # The one-hot target is built here, outside the timed region: the claim is about the loss
    # given each kind of target, not about making one.
    probs = F.one_hot(target, c).to(dtype)
    return logits, target, probs


def _with_grad(loss_fn, logits):
    x = logits.detach().requires_grad_(True)
    loss = loss_fn(x)
    (grad,) = torch.autograd.grad(loss, x)
    return loss.detach(), grad


def ce_indices(logits, target, probs):
    return _with_grad(lambda x: F.cross_entropy(x, target), logits)


def ce_probabilities(logits, target, probs):
    # Reads and writes the N·C target as well as the logits, forward and backward.
    return _with_grad(lambda x: F.cross_entropy(x, probs), logits)


def log_softmax_nll(logits, target, probs):
    # Two ops: materialises the (N, C) log-probabilities, then gathers N of them.
    return _with_grad(lambda x: F.nll_loss(F.log_softmax(x, dim=1), target), logits)


def ce_float64(logits, target, probs):
    """The truth from the definition, in float64: loss = mean(logsumexp(x_n) - x_{n,y_n}),
    dloss/dx = (softmax(x) - onehot(y)) / N."""
    x = logits.double()
    n = x.shape[0]
    lse = torch.logsumexp(x, dim=1)
    loss = (lse - x[torch.arange(n, device=x.device), target]).mean()
    grad = (torch.exp(x - lse[:, None]) - F.one_hot(target, x.shape[1]).double()) / n
    return loss, grad


# ---- edge inputs: every variant checked on them too (tests/integration/test_seeds_and_edges.py) ---

INPUT_FAMILIES = {
    # Every logit equal (1.5): softmax ties at exactly 1/C everywhere, loss = log C.
    "equal_logits": InputFamily(lambda logits, target, probs: (torch.full_like(logits, 1.5), target, probs)),
    # Logits ×2¹⁰ ≈ 3000·N(0,1): exp overflows fp32 past 88, so only a max-subtracted log-sum-exp
    # is finite; the bounds hold as they are (softmax is 0 or 1 to within the floor but for the
    # few logits near the max, whose |x_i − lse| stays small).
    "large_logits": InputFamily(lambda logits, target, probs: (logits * 2.0**10, target, probs)),
    "one_sample": InputFamily(resize=lambda s: {**s, "n": 1}),  # a batch of one: the mean is one term
}


# ---- checks --------------------------------------------------------------------------------------


def _small(device, n=64, c=10, seed=1):
    return make_logits({"n": n, "c": c}, torch.float64, device, seed)


def check_label_smoothing(device):
    """label_smoothing=ε equals a probability target (1-ε)·onehot + ε/C, and the definition."""
    x, y, onehot = _small(device)
    c = x.shape[1]
    eps = 0.1
    smooth = F.cross_entropy(x, y, label_smoothing=eps)
    as_probs = F.cross_entropy(x, (1 - eps) * onehot + eps / c)
    logp = F.log_softmax(x, 1)
    truth = -((1 - eps) * logp.gather(1, y[:, None]).squeeze(1) + eps / c * logp.sum(1)).mean()
    # float64 throughout (these checks' inputs are float64): means of 64 rows of C = 10 log-probabilities
    # of O(1), ≲ 74u₆₄ = 8e-15 relative apart; 1e-12 is float64 slack and 10⁹ below a wrong formula.
    plain = F.cross_entropy(x, y)
    return judge_label_smoothing(
        abs(smooth - truth).item(), abs(as_probs - truth).item(), abs(plain - smooth).item(), smooth.item()
    )


# float64 slack for these checks' equalities (see check_label_smoothing), and the least a real
# difference must be (ε = 0.1 moves the loss by 0.015; ÷N vs ÷kept by 1.4; the weighted normalisers 2.9).
F64_SLACK, REAL_DIFFERENCE = 1e-12, 1e-3


def judge_label_smoothing(smooth_err: float, probs_err: float, moved: float, loss: float) -> Finding:
    """label_smoothing=ε is cross entropy against (1-ε)·onehot + ε/C: equal to the formula and to
    that probability target, and different from the unsmoothed loss."""
    holds = smooth_err <= F64_SLACK and probs_err <= F64_SLACK and moved > REAL_DIFFERENCE
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"label_smoothing=0.1: {loss:.6f}, off the formula by {smooth_err:.2g}, the smoothed-probability "
        f"target by {probs_err:.2g}; it moved the loss by {moved:.4f}",
    )


def check_ignore_index(device):
    """ignore_index drops rows from the sum *and* from the mean's denominator."""
    x, y, _ = _small(device)
    y = y.clone()
    y[::4] = -100
    keep = y != -100
    got = F.cross_entropy(x, y)
    truth = F.cross_entropy(x[keep], y[keep])
    per_row = F.cross_entropy(x, y, reduction="none")
    wrong = per_row.sum() / len(y)
    # ÷N instead of ÷(3N/4) scales the loss (5.49) by 3/4: 1.4 off, far above REAL_DIFFERENCE.
    return judge_ignore_index(
        abs(got - truth).item(),
        int((per_row[~keep] != 0).sum()),
        got.item(),
        wrong.item(),
        int(keep.sum()),
        len(y),
    )


def judge_ignore_index(
    err: float, ignored_nonzero: int, got: float, over_n: float, kept: int, n: int
) -> Finding:
    """l_n × 1{y_n ≠ ignore}: ignored rows contribute exactly 0, and the mean is over the kept rows
    (equal to the loss of the kept rows alone), which differs from dividing by N."""
    holds = err <= F64_SLACK and ignored_nonzero == 0 and abs(over_n - got) > REAL_DIFFERENCE
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"{n - kept}/{n} rows ignored: {ignored_nonzero} of them non-zero; the mean ({got:.5f}) is off the "
        f"kept rows' loss by {err:.2g}; dividing by N would give {over_n:.5f}",
    )


def check_weight_mean_differs(device):
    """With `weight` and reduction='mean', indices normalise by Σ w[y_n], probabilities by N:
    the two targets that agree without weights disagree with them."""
    x, y, onehot = _small(device)
    w = torch.linspace(0.2, 3.0, x.shape[1], dtype=x.dtype, device=device)
    by_index = F.cross_entropy(x, y, weight=w)
    by_probs = F.cross_entropy(x, onehot, weight=w)
    nll = -F.log_softmax(x, 1).gather(1, y[:, None]).squeeze(1) * w[y]
    # float64: as in check_label_smoothing; the normalisers differ (Σw[y] = 1.56·N): 5.18 vs 8.09.
    return judge_weighted(
        abs(by_index - nll.sum() / w[y].sum()).item(),
        abs(by_probs - nll.sum() / len(y)).item(),
        by_index.item(),
        by_probs.item(),
    )


def judge_weighted(index_err: float, probs_err: float, by_index: float, by_probs: float) -> Finding:
    """l_n = -w_{y_n}·log softmax(x_n)_{y_n} with indices, and under reduction='mean' the sum divided
    by Σ w[y_n] (the documented formula the notes show). That one-hot probabilities divide by N
    instead (not interchangeable when weighted) is reported beside it."""
    holds = index_err <= F64_SLACK
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"weight + mean: indices {by_index:.5f} = Σ w[y]·l / Σ w[y] to {index_err:.2g}; "
        f"one-hot probabilities "
        f"{by_probs:.5f} (÷N, to {probs_err:.2g}): "
        + (
            "not interchangeable when weighted"
            if abs(by_index - by_probs) > REAL_DIFFERENCE
            else "equal here"
        ),
    )


def check_k_dim(device):
    """(N, C, d1, d2) logits with (N, d1, d2) targets = the same rows flattened to (N·d1·d2, C)."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 5, 6, 7, generator=g, dtype=torch.float64).to(device)
    y = torch.randint(0, 5, (4, 6, 7), generator=g).to(device)
    got = F.cross_entropy(x, y, reduction="none")
    flat = F.cross_entropy(x.permute(0, 2, 3, 1).reshape(-1, 5), y.reshape(-1), reduction="none")
    flat_err = (got.reshape(-1) - flat).abs().max().item() if got.numel() == flat.numel() else float("inf")
    probs = F.one_hot(y, 5).permute(0, 3, 1, 2).double()  # probabilities carry C at dim 1 too
    probs_err = abs(F.cross_entropy(x, probs) - got.mean()).item()
    return judge_k_dim(tuple(got.shape), flat_err, probs_err)


def judge_k_dim(shape: tuple, flat_err: float, probs_err: float) -> Finding:
    """Input [Batch, C, d1, d2] with target [Batch, d1, d2]: a loss per pixel, shape (4, 6, 7) here,
    equal to the same rows flattened to (N·d1·d2, C) (float64 slack)."""
    holds = shape == (4, 6, 7) and flat_err <= F64_SLACK
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"K-dim input (4,5,6,7) with target (4,6,7): per-pixel loss of shape {shape}, off the flattened "
        f"(168,5) loss by {flat_err:.2g}; a probability target must be (4,5,6,7), class at dim 1 "
        f"(its mean off by {probs_err:.2g})",
    )


def check_indices_faster(device):
    """The notes' claim, measured at one LLM-like vocabulary size with both targets ready, the two
    targets timed in alternating rounds and judged by the gain policy (cases._lib.timing)."""
    n, c = (256, 8192) if device.type == "cpu" else (8192, 32768)
    logits, target, probs = make_logits({"n": n, "c": c}, FP32, device, 0)
    ratio, busy = timed_claim(
        {
            "indices": lambda: ce_indices(logits, target, probs),
            "probabilities": lambda: ce_probabilities(logits, target, probs),
        },
        fast="indices",
        slow="probabilities",
        device=device,
    )
    return judge_indices_faster(ratio, busy, f"N={n} C={c} fp32 forward+backward on {device.type}")


def judge_indices_faster(ratio, busy: str | None, where: str) -> Finding:
    """The notes (quoting the docs): "performance ... is generally better when target contains class
    indices": probabilities ÷ indices by the gain policy (cases._lib.timing.judge_faster)."""
    verdict, said = judge_faster(ratio, busy, "probabilities ÷ indices")
    return Finding(verdict, f"{where}, {said}")


CASE = Case(
    id="loss.cross_entropy",
    tier=2,
    claim="CrossEntropyLoss is faster with class-index targets than with class-probability (one-hot) "
    "targets; it equals log_softmax + nll_loss; label smoothing, ignore_index, weight and K-dim inputs "
    "behave as documented.",
    source="004 Loss函数",
    make_inputs=make_logits,
    variants={
        "probabilities": naive(
            ce_probabilities, peak_bytes=lambda s, b: 5 * s["n"] * s["c"] * b, claim="probability_target"
        ),
        "indices": optimized(ce_indices, peak_bytes=lambda s, b: 3 * s["n"] * s["c"] * b, claim="softmax_ce"),
        "log_softmax_nll": library(log_softmax_nll, peak_bytes=lambda s, b: 4 * s["n"] * s["c"] * b),
    },
    oracle=ce_float64,
    # Loss ≈ 3·log C; the gradient entries are ≤ 1/N: atol scales with the dtype's eps.
    # Outputs (loss ≈ 11, grads within ±1/N) are relative to their own scale. softmax(x)_i =
    # exp(x_i − lse): relative error u·|x_i − lse| ≤ 32u (logits 3·N(0,1)) plus lse's, a sum of
    # C positive terms, ~u·√C relative (measured 102u in all at C = 32768): rtol 2u(√C + 16).
    # p_y − 1 cancels when p_y ≈ 1: u of 1/N, a floor at the grads' scale. bf16: log_softmax's
    # output is rounded, u·|log p| relative on p, at most 0.37u of 1/N, and the grad once more.
    tolerance={
        FP32: lambda s: Tol(rtol=2 * U[FP32] * (s["c"] ** 0.5 + 16), floor=4 * U[FP32]),
        BF16: Tol(rtol=2 * U[BF16], floor=4 * U[BF16]),
    },
    dtypes={"cpu": (FP32,), "cuda": (FP32, BF16)},
    sizes={
        "quick": [{"n": n, "c": 1000} for n in (64, 512)],
        "full": [{"n": n, "c": 32768} for n in (1024, 4096, 16384)],
    },
    claims=(
        Claim(
            "softmax_ce",
            "CrossEntropyLoss : 从logiti -> softmax -> CrossEntropy",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "probability_target",
            "Consider providing target as class probabilities only when a single class label per minibatch "
            "item is too restrictive.",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "k_dim",
            "input x: [Batch, C, d1, d2, ..., dk] … computing cross entropy loss per-pixel for 2D images; "
            "target y: [Batch, d1, d2, ..., dk]",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "weighted",
            "l_n = -ω_{y_n} log(exp(x_{n,y_n}) / Σ_c exp(x_{n,c})) [reduction='mean': the weighted mean]",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim("ignore_index", "× 1{y_n ≠ ignore} (ignore_index=-100)", "004", ClaimKind.BEHAVIOUR),
        Claim(
            "label_smoothing",
            "对于添加了label smoothing的标签而言 [the documented formula]",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "indices_faster",
            "The performance of this criterion is generally better when target contains class indices, as "
            "this allows for optimized computation.",
            "004",
            ClaimKind.SPEED,
        ),
    ),
    checks={
        "label_smoothing": Check(check_label_smoothing, claim="label_smoothing"),
        "ignore_index": Check(check_ignore_index, claim="ignore_index"),
        "weight_mean_differs": Check(check_weight_mean_differs, claim="weighted"),
        "k_dim": Check(check_k_dim, claim="k_dim"),
        "indices_faster": Check(check_indices_faster, claim="indices_faster"),
    },
    input_families=INPUT_FAMILIES,
    verdict=Faster("indices", "probabilities", claim="indices_faster"),
    # Forward + backward: log-sum-exp and softmax over N·C, read twice; probabilities read N·C more.
    bytes_moved=lambda s, b: 3 * s["n"] * s["c"] * b,
)
