"""A custom `autograd.Function` wrapped in an `nn.Module`: the notes' `BinarizedF`, a straight-through
estimator (notes 000/001 "Auto-grad").

Forward: sign with sign(0) = +1. The STE's backward passes the upstream gradient where |x| ≤ 1 and
blocks it elsewhere: grad_in = grad_out · 1{|x| ≤ 1}. The notes' backward returns the mask alone,
dropping grad_out: right only when the upstream gradient is all ones (loss = out.sum()).
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict


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
    for fn in (NotesBinarizedF, BinarizedF):
        out = Binarized(fn)(x)
        expected = (x >= 0).to(x.dtype) * 2 - 1  # independent of torch.where
        assert torch.equal(out, expected), f"{fn.__name__}: forward is not sign with sign(0)=+1"
    return Finding(Verdict.HOLDS, f"forward == 2·1{{x≥0}}−1 on {x.numel()} values, including x=0 → +1")


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
    assert ones_ok, "the notes' STE should be right when the upstream gradient is all ones"
    return judge_ste_backward(fixed_ones and fixed_err == 0.0, notes_err)


def judge_ste_backward(chain_rule_exact: bool, notes_err: float) -> Finding:
    """The technique: a straight-through estimator, grad_out·1{|x|≤1}, exact by the chain rule.
    The notes' backward drops grad_out: a wrong formula of the notes where a weighted loss shows it."""
    errata = ()
    if notes_err > 0:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "backward: return grad_input = 1{|input| <= 1} (no output_grad factor)",
                f"right for loss=out.sum() only; off by up to {notes_err:.3g} for loss=(out·w).sum()",
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
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), Binarized(), torch.nn.Linear(16, 1)).to(device)
    x = torch.randn(32, 8, generator=g).to(device)
    net(x).square().mean().backward()
    first = net[0].weight.grad
    assert first is not None and first.abs().sum() > 0, "no gradient reached the layer before Binarized"
    assert list(dict(net.named_parameters())) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    # The same gradient by hand: the STE mask times the upstream grad, through the first Linear.
    h = net[0](x)
    s = torch.where(h >= 0, 1.0, -1.0).requires_grad_()
    (ds,) = torch.autograd.grad(net[2](s).square().mean(), s)
    by_hand = (ds * (h.abs() <= 1)).T @ x
    torch.testing.assert_close(first, by_hand, rtol=1e-5, atol=1e-6)
    return Finding(
        Verdict.HOLDS,
        f"Binarized() in nn.Sequential adds no parameters; the first Linear's grad (norm "
        f"{first.norm().item():.3g}) equals the by-hand STE chain rule",
    )


def check_gradcheck(device):
    x = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).to(device)
    smooth = torch.autograd.gradcheck(lambda t: ScaledTanhF.apply(t, 1.7), (x.requires_grad_(),))
    assert smooth, "gradcheck should pass for a correct smooth custom Function"
    # gradcheck on the STE: its backward is a surrogate, not sign's derivative (0 almost everywhere).
    # Inputs away from 0 so the numerical derivative is exactly 0.
    y = (x.detach().abs() + 0.1) * x.detach().sign()
    ste = torch.autograd.gradcheck(BinarizedF.apply, (y.clone().requires_grad_(),), raise_exception=False)
    assert not ste, "gradcheck should reject the STE: its backward is not the true derivative"
    return Finding(
        None,
        "gradcheck passes for a smooth custom Function (tanh(1.7x), float64) and rejects the STE, whose "
        "backward is by design not sign's derivative",
    )


CASE = Case(
    id="autograd.custom_function",
    tier=3,
    claim="A custom autograd.Function (BinarizedF: sign forward, straight-through backward 1{|x|≤1}) "
    "wrapped in an nn.Module behaves like any other layer.",
    source="000/001 Auto-grad",
    checks={
        "forward": Check(check_forward),
        "ste_backward": Check(check_ste_backward),
        "module_in_network": Check(check_module_in_network),
        "gradcheck": Check(check_gradcheck),
    },
)
