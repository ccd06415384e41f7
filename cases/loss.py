"""Cross-entropy: class indices vs class probabilities vs log_softmax + nll (note 004, Loss函数).

The notes quote the documentation: "performance is generally better when target contains class
indices". With indices the loss reads one logit per row (N gathers) beside the log-sum-exp; with
probabilities it multiplies the whole (N, C) log-softmax by the (N, C) target and reduces it: one
more N·C read, and a target N·C times larger to store and move. Each variant is timed forward +
backward (how a loss is used), returning (loss, dloss/dlogits).

The equivalences are not total, and the checks pin down where they stop: `weight` under
reduction='mean' divides by Σ w[y_n] with indices but by N with probabilities; `ignore_index`
exists only for indices; label smoothing equals a smoothed probability target. The notes' formula is
the per-row one (reduction='none'); what 'mean' divides by is an image in the notes, reported only.
Their "一共有k个分类" for input [Batch, C, d1, ..., dk] is checked as written: the classes are C.
"""

from __future__ import annotations

import inspect

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
    default = inspect.signature(torch.nn.CrossEntropyLoss).parameters["label_smoothing"].default
    return judge_label_smoothing(
        abs(smooth - truth).item(),
        abs(as_probs - truth).item(),
        abs(plain - smooth).item(),
        smooth.item(),
        default,
    )


# float64 slack for these checks' equalities (see check_label_smoothing), and the least a real
# difference must be (ε = 0.1 moves the loss by 0.015; ÷N vs ÷kept by 1.4; the weighted normalisers 2.9).
F64_SLACK, REAL_DIFFERENCE = 1e-12, 1e-3


def judge_label_smoothing(
    smooth_err: float, probs_err: float, moved: float, loss: float, default: float = 0.0
) -> Finding:
    """label_smoothing=0.0 by default (the notes' signature); with ε it is cross entropy against
    the smoothed labels (1-ε)·onehot + ε/C: equal to that formula and to that probability target,
    and different from the unsmoothed loss."""
    holds = default == 0.0 and smooth_err <= F64_SLACK and probs_err <= F64_SLACK and moved > REAL_DIFFERENCE
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"default label_smoothing={default!r}; label_smoothing=0.1: {loss:.6f}, off the formula by "
        f"{smooth_err:.2g}, the smoothed-probability target by {probs_err:.2g}; it moved the loss by "
        f"{moved:.4f}",
    )


def _formula(x, y, w=None, ignore=-100):
    """The notes' l_n = -w[y_n]·log(exp(x_{n,y_n}) / Σ_c exp(x_{n,c})) × 1{y_n ≠ ignore}, by hand in
    float64 (log-sum-exp with the row max subtracted)."""
    keep = y != ignore
    safe = torch.where(keep, y, torch.zeros_like(y))
    m = x.max(1, keepdim=True).values
    logp = x - m - (x - m).exp().sum(1, keepdim=True).log()
    weight = torch.ones(x.shape[1], dtype=x.dtype, device=x.device) if w is None else w
    return -weight[safe] * logp.gather(1, safe[:, None]).squeeze(1) * keep


def check_ignore_index(device):
    """reduction='none' with the default ignore_index (-100): each row is the notes' formula, the
    ignored rows exactly 0. What 'mean' divides by (an image in the notes) is reported beside it."""
    x, y, _ = _small(device)
    y = y.clone()
    y[::4] = -100
    keep = y != -100
    per_row = F.cross_entropy(x, y, reduction="none")
    # float64 (see check_label_smoothing): log-softmax entries of O(1) in another order: ≲ 1e-14 apart.
    kept_err = (per_row - _formula(x, y))[keep].abs().max().item()
    got = F.cross_entropy(x, y)
    return judge_ignore_index(
        kept_err,
        int((per_row[~keep] != 0).sum()),
        abs(got - F.cross_entropy(x[keep], y[keep])).item(),
        got.item(),
        (per_row.sum() / len(y)).item(),
        int(keep.sum()),
        len(y),
    )


def judge_ignore_index(
    kept_err: float, ignored_nonzero: int, mean_err: float, got: float, over_n: float, kept: int, n: int
) -> Finding:
    """l_n × 1{y_n ≠ ignore} with ignore_index=-100 by default: the ignored rows contribute exactly 0
    and the kept rows equal the formula (float64 slack). The mean's denominator (the kept rows, not
    N) is context: the notes show that formula only as an image."""
    holds = kept_err <= F64_SLACK and ignored_nonzero == 0
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"reduction='none', target -100 in {n - kept}/{n} rows: {ignored_nonzero} of them non-zero, the kept "
        f"rows off the formula by {kept_err:.2g}; 'mean' ({got:.5f}) divides by the {kept} kept rows (off "
        f"their own mean by {mean_err:.2g}; dividing by N would give {over_n:.5f})",
    )


def check_weight_mean_differs(device):
    """reduction='none' with `weight`: each row is -w[y_n]·log softmax(x_n)[y_n]. Under 'mean',
    indices normalise by Σ w[y_n], one-hot probabilities by N: reported beside it."""
    x, y, onehot = _small(device)
    w = torch.linspace(0.2, 3.0, x.shape[1], dtype=x.dtype, device=device)
    per_row = F.cross_entropy(x, y, weight=w, reduction="none")
    by_index = F.cross_entropy(x, y, weight=w)
    by_probs = F.cross_entropy(x, onehot, weight=w)
    nll = _formula(x, y, w)
    # float64: as in check_label_smoothing; the normalisers differ (Σw[y] = 1.56·N): 5.18 vs 8.09.
    return judge_weighted(
        (per_row - nll).abs().max().item(),
        abs(by_index - nll.sum() / w[y].sum()).item(),
        by_index.item(),
        by_probs.item(),
    )


def judge_weighted(row_err: float, mean_err: float, by_index: float, by_probs: float) -> Finding:
    """The notes' l_n = -ω_{y_n}·log softmax(x_n)_{y_n}: each row of reduction='none' with `weight`
    equals it (float64 slack). That 'mean' divides by Σ w[y_n] with indices but by N with one-hot
    probabilities (not interchangeable when weighted) is reported beside it."""
    holds = row_err <= F64_SLACK
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"weight, reduction='none': rows off -w[y]·log softmax by {row_err:.2g}; 'mean': indices "
        f"{by_index:.5f} = Σ w[y]·l / Σ w[y] to {mean_err:.2g}, one-hot probabilities {by_probs:.5f} (÷N): "
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


def check_k_classes(device):
    """The notes list input [Batch, C, d1, …, dk] and say "一共有k个分类" (k classes in all). With C = 5
    and k = 2 extra dims, each target value 0..C is tried: the classes are those accepted."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 3, 4, generator=g, dtype=torch.float64).to(device)
    accepted = []
    for value in range(x.shape[1] + 1):
        try:
            F.cross_entropy(x, torch.full((2, 3, 4), value, device=device))
            accepted.append(value)
        except (IndexError, RuntimeError):
            pass
    return judge_k_classes(x.dim() - 2, x.shape[1], accepted)


def judge_k_classes(k: int, c: int, accepted: list) -> Finding:
    """ "一共有k个分类": the number of classes is k, the count of the extra dims d1..dk. Holds where the
    targets accepted are exactly 0..k-1; fails where they run to C-1 (C classes, k unrelated)."""
    holds = accepted == list(range(k))
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"input (2, {c}, 3, 4): k = {k} extra dims, C = {c}; targets accepted: {accepted}"
        + (
            f": {k} classes, as stated"
            if holds
            else f": {len(accepted)} classes, NOT k = {k}; the classes are the C at dim 1, k counts the "
            "extra dims (a K-dimensional loss)"
        ),
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
    "behave as documented; a K-dim input has k classes (the notes).",
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
            reading="CrossEntropyLoss on logits and class indices is the cross entropy of their softmax: "
            "mean over rows of logsumexp(x_n) - x_{n,y_n}, and its gradient (softmax - onehot)/N, against "
            "float64",
        ),
        Claim(
            "probability_target",
            "Consider providing target as class probabilities only when a single class label per minibatch "
            "item is too restrictive.",
            "004",
            ClaimKind.CORRECTNESS,
            reading="a class-probability target is accepted and gives the cross entropy against that "
            "distribution: a one-hot target gives the indices' loss and gradient (float64 truth)",
        ),
        Claim(
            "k_dim",
            "[Batch, C, d1, d2, ..., dk] … computing cross entropy loss per-pixel for 2D images. … "
            "[Batch, d1, d2, ..., dk]",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="input (N, C, d1, d2) with target (N, d1, d2) gives one loss per pixel, equal to the "
            "same rows flattened to (N·d1·d2, C)",
        ),
        Claim(
            "k_classes",
            "一共有k个分类",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="for input [Batch, C, d1, …, dk] the number of classes is k",
        ),
        Claim(
            "weighted",
            "可以添加weighted和ignore … "
            r"l_n = -\omega_{y_n}\log \frac{\exp(x_{n,y_n})}{\sum\limits_{c=1}^C\exp (x_n ,c)}",
            "004",
            ClaimKind.CORRECTNESS,
            reading="with `weight`, reduction='none' gives per row -w[y_n]·log softmax(x_n)[y_n] (the sum in "
            "the denominator over x_{n,c}); the 'mean' formula is an image in the notes, reported only",
        ),
        Claim(
            "ignore_index",
            r"\times 1 \{y_n \neq ignore\} … ignore_index=- 100",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="rows whose target is ignore_index (default -100) contribute exactly 0 under "
            "reduction='none', the other rows the formula",
        ),
        Claim(
            "label_smoothing",
            "label_smoothing=0.0 … 对于添加了label smoothing的标签而言",
            "004",
            ClaimKind.CORRECTNESS,
            reading="label_smoothing defaults to 0.0; with ε the loss is computed against the smoothed "
            "labels (1-ε)·onehot + ε/C (the notes give the formula as an image; this is the documentation's)",
        ),
        Claim(
            "indices_faster",
            "The performance of this criterion is generally better when target contains class indices, as "
            "this allows for optimized computation.",
            "004",
            ClaimKind.SPEED,
            reading="cross entropy forward + backward is faster with class-index targets than with (one-hot) "
            "class-probability targets, both prepared in advance",
        ),
    ),
    checks={
        "label_smoothing": Check(check_label_smoothing, claim="label_smoothing"),
        "ignore_index": Check(check_ignore_index, claim="ignore_index"),
        "weight_mean_differs": Check(check_weight_mean_differs, claim="weighted"),
        "k_dim": Check(check_k_dim, claim="k_dim"),
        # CPU only: an out-of-range target is a device-side assert on CUDA, which ends the process's
        # CUDA context; which values are classes does not depend on the device.
        "k_classes": Check(check_k_classes, devices=("cpu",), claim="k_classes"),
        "indices_faster": Check(check_indices_faster, claim="indices_faster"),
    },
    input_families=INPUT_FAMILIES,
    verdict=Faster("indices", "probabilities", claim="indices_faster"),
    # Forward + backward: log-sum-exp and softmax over N·C, read twice; probabilities read N·C more.
    bytes_moved=lambda s, b: 3 * s["n"] * s["c"] * b,
)
