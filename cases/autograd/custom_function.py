"""A custom `autograd.Function` wrapped in an `nn.Module`: the notes' `BinarizedF`, a straight-through
estimator (notes 000/001 "Auto-grad").

Forward: sign with sign(0) = +1. The STE's backward passes the upstream gradient where |x| ≤ 1 and
blocks it elsewhere: grad_in = grad_out · 1{|x| ≤ 1}. The notes' backward returns the mask alone,
dropping grad_out: right only when the upstream gradient is all ones (loss = out.sum()).
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from cases.spec import UNIT_ROUNDOFF, Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict


class NotesBinarizedF(Function):
    """As written in the notes."""

    @staticmethod
    def forward(ctx, input_):
        ctx.save_for_backward(input_)
        a = torch.ones_like(input_)
        b = -torch.ones_like(input_)
        return torch.where(input_ >= 0, a, b)

    @staticmethod
    def backward(ctx, output_grad):
        (input_,) = ctx.saved_tensors
        ones, zeros = torch.ones_like(input_), torch.zeros_like(input_)
        return torch.where(input_.abs() <= 1, ones, zeros)


class BinarizedF(Function):
    """The STE with the chain rule applied."""

    @staticmethod
    def forward(ctx, input_):
        ctx.save_for_backward(input_)
        return torch.where(input_ >= 0, 1.0, -1.0).to(input_.dtype)

    @staticmethod
    def backward(ctx, output_grad):
        (input_,) = ctx.saved_tensors
        return output_grad * (input_.abs() <= 1).to(output_grad.dtype)


class Binarized(torch.nn.Module):
    def __init__(self, fn=BinarizedF):
        super().__init__()
        self.fn = fn

    def forward(self, input_):
        return self.fn.apply(input_)


class ScaledTanhF(Function):
    """A smooth custom Function (tanh(βx)), the kind of op `gradcheck` can verify."""

    @staticmethod
    def forward(ctx, x, beta: float):
        y = torch.tanh(beta * x)
        ctx.save_for_backward(y)
        ctx.beta = beta
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * ctx.beta * (1 - y * y), None


def _inputs(device, n=257, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(n, generator=g)
    x[:3] = torch.tensor([0.0, 1.0, -1.0])  # the edges: sign(0) = +1, |x| = 1 passes
    return x.to(device), torch.randn(n, generator=g).to(device)


def check_forward(device):
    x, _ = _inputs(device)
    expected = (x >= 0).to(x.dtype) * 2 - 1  # independent of torch.where
    wrong = {fn.__name__: int((Binarized(fn)(x) != expected).sum()) for fn in (NotesBinarizedF, BinarizedF)}
    return judge_forward(wrong, x.numel())


def judge_forward(wrong: dict[str, int], n: int) -> Finding:
    """The technique's forward is sign with sign(0) = +1, as the notes write it: every form
    (the notes' and the corrected one) must give 2·1{x≥0}−1 on every value, the edges included."""
    bad = {name: k for name, k in wrong.items() if k}
    return Finding(
        Verdict.FAILS if bad else Verdict.HOLDS,
        f"forward == 2·1{{x≥0}}−1 on {n} values including x=0 → +1"
        + (f": NOT for {bad} values" if bad else f" ({', '.join(wrong)})"),
    )


def check_ste_backward(device):
    x, upstream = _inputs(device)
    mask = (x.abs() <= 1).to(x.dtype)
    results = {}
    for fn in (NotesBinarizedF, BinarizedF):
        # loss = out.sum(): upstream gradient is all ones.
        a = x.clone().requires_grad_()
        Binarized(fn)(a).sum().backward()
        # loss = (out · w).sum(): upstream gradient is w.
        b = x.clone().requires_grad_()
        (Binarized(fn)(b) * upstream).sum().backward()
        results[fn.__name__] = (torch.equal(a.grad, mask), (b.grad - upstream * mask).abs().max().item())
    ones_ok, notes_err = results["NotesBinarizedF"]
    fixed_ones, fixed_err = results["BinarizedF"]
    return judge_ste_backward(fixed_ones and fixed_err == 0.0, notes_err, ones_ok)


def judge_ste_backward(chain_rule_exact: bool, notes_err: float, notes_exact_for_sum: bool = True) -> Finding:
    """The technique: a straight-through estimator, grad_out·1{|x|≤1}, exact by the chain rule.
    The notes' backward drops grad_out: a wrong formula of the notes where a weighted loss shows it."""
    errata = ()
    if notes_err > 0 or not notes_exact_for_sum:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "input_grad = torch.where(input_abs <= 1, ones, zeros)\nreturn input_grad",
                "the gradient drops output_grad (no output_grad factor): "
                + (
                    "right for loss=out.sum() only"
                    if notes_exact_for_sum
                    else "wrong even for loss=out.sum()"
                )
                + f"; off by up to {notes_err:.3g} for loss=(out·w).sum() (w ~ N(0, 1))",
            ),
        )
    return Finding(
        Verdict.HOLDS if chain_rule_exact else Verdict.FAILS,
        "the STE backward grad_out·1{|x|≤1} is "
        + ("exact for loss=out.sum() and loss=(out·w).sum()" if chain_rule_exact else "NOT exact"),
        errata,
    )


def check_module_in_network(device):
    """Wrapped in an nn.Module, the Function trains like a layer: gradient reaches the Linear before it."""
    g = torch.Generator().manual_seed(1)
    with torch.random.fork_rng(devices=[]):  # seeded weights, the global stream left as it was
        torch.manual_seed(1)
        net = torch.nn.Sequential(torch.nn.Linear(8, 16), Binarized(), torch.nn.Linear(16, 1)).to(device)
    x = torch.randn(32, 8, generator=g).to(device)
    net(x).square().mean().backward()
    first = net[0].weight.grad
    # The same gradient by hand: the STE mask times the upstream grad, through the first Linear.
    h = net[0](x)
    s = torch.where(h >= 0, 1.0, -1.0).requires_grad_()
    (ds,) = torch.autograd.grad(net[2](s).square().mean(), s)
    upstream = ds * (h.abs() <= 1)
    by_hand = upstream.T @ x
    # The same upstream gradient through an fp32 GEMM over 32 rows on each side: Higham's γ₃₂·|δ|ᵀ|x|
    # each, elementwise, so twice that apart.
    bound = 2 * 32 * UNIT_ROUNDOFF[torch.float32] * (upstream.abs().T @ x.abs())
    close = first is not None and bool(((first - by_hand).abs() <= bound).all())
    return judge_module_in_network(
        [n for n, _ in net.named_parameters() if n.startswith("1.")],
        0.0 if first is None else first.norm().item(),
        close,
    )


def judge_module_in_network(own_params: list[str], first_grad_norm: float, equals_by_hand: bool) -> Finding:
    """Wrapped in an nn.Module, the Function is a layer: it adds no parameters, and the gradient
    reaches the layer before it, equal to the chain rule through the STE written by hand."""
    ok = not own_params and first_grad_norm > 0 and equals_by_hand
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"Binarized() in nn.Sequential adds parameters {own_params or 'none'}; the first Linear's grad "
        f"(norm {first_grad_norm:.3g}) "
        + ("equals" if equals_by_hand else "does NOT equal")
        + " the by-hand STE chain rule",
    )


def check_gradcheck(device):
    x = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).to(device)
    smooth = torch.autograd.gradcheck(
        lambda t: ScaledTanhF.apply(t, 1.7), (x.requires_grad_(),), raise_exception=False
    )
    # gradcheck on the STE: its backward is a surrogate, not sign's derivative (0 almost everywhere).
    # Inputs away from 0 so the numerical derivative is exactly 0.
    y = (x.detach().abs() + 0.1) * x.detach().sign()
    ste = torch.autograd.gradcheck(BinarizedF.apply, (y.clone().requires_grad_(),), raise_exception=False)
    return judge_gradcheck(smooth, ste)


def judge_gradcheck(smooth_passes: bool, ste_passes: bool) -> Finding:
    """A custom Function's backward is verified by gradcheck where it is a derivative: a smooth
    Function must pass. The STE's backward is a surrogate by design, so gradcheck rejecting it is
    expected and decides nothing."""
    return Finding(
        Verdict.HOLDS if smooth_passes else Verdict.FAILS,
        "gradcheck "
        + ("passes" if smooth_passes else "FAILS")
        + " for a smooth custom Function (tanh(1.7x), float64); it "
        + ("rejects" if not ste_passes else "accepts")
        + " the STE, whose backward is by design not sign's derivative",
    )


CASE = Case(
    id="autograd.custom_function",
    tier=3,
    claim="A custom autograd.Function (BinarizedF: sign forward, straight-through backward 1{|x|≤1}) "
    "wrapped in an nn.Module behaves like any other layer.",
    source="000/001 Auto-grad",
    claims=(
        Claim("forward", "output = torch.where(input_ >= 0, a, b)", "001", ClaimKind.CORRECTNESS),
        Claim(
            "ste_backward",
            "自定义处理层，实现backward 处理。 从auto_grad 中继承 Function 实现 forward & backward "
            "[BinarizedF's backward: the straight-through gradient, output_grad passed where |input| ≤ 1]",
            "001",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "module_layer",
            "再继承 nn.Module， 实现 forward, 就与一般的神经网络层一致了",
            "001",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "forward": Check(check_forward, claim="forward"),
        "ste_backward": Check(check_ste_backward, claim="ste_backward"),
        "module_in_network": Check(check_module_in_network, claim="module_layer"),
        # gradcheck is the catalogue's addition (the notes never mention it): context.
        "gradcheck": Check(check_gradcheck),
    },
)
