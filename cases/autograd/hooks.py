"""Module hooks (notes 001 "hook"): ``register_forward_hook`` and the backward hooks.

The notes use ``register_backward_hook``. It is deprecated: it attaches to the *last* autograd node
of the module's forward, so for a module made of several ops its ``grad_input`` is the gradient
w.r.t. that node's inputs, not the module's. ``register_full_backward_hook`` reports the module's
true input and output gradients. For a one-op module (the notes' ``conv2``) both agree.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
from notes.deprecation import is_deprecation


class TwoOps(nn.Module):
    """relu(linear(x)) · 2: three autograd nodes, so the old hook sees only the last (the ·2)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


def _x(shape, device, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def check_forward_hook(device):
    conv = nn.Conv2d(3, 5, 3).to(device)
    seen = {}

    def printnorm(module, inputs, output):  # the notes' signature
        seen.update(module=module, inputs=inputs, output=output)

    handle = conv.register_forward_hook(printnorm)
    x = _x((2, 3, 8, 8), device)
    out = conv(x)
    arguments = (
        seen.get("module") is conv
        and isinstance(seen.get("inputs"), tuple)
        and seen["inputs"][0] is x
        and seen.get("output") is out
    )
    # A forward hook that returns a value replaces the output.
    handle.remove()
    handle = conv.register_forward_hook(lambda m, i, o: o * 0 + 7)
    replaced = torch.equal(conv(x), torch.full_like(out, 7.0))
    handle.remove()
    removed = torch.equal(conv(x), out)
    return judge_forward_hook(arguments, tuple(x.shape), tuple(out.shape), replaced, removed)


def judge_forward_hook(
    arguments: bool, in_shape: tuple, out_shape: tuple, replaces: bool, removed: bool
) -> Finding:
    """The notes' forward hook: called on forward with (module, (input,), output), input[0] the
    very tensor passed. Returning a value replaces the output; a removed hook no longer acts."""
    ok = arguments and replaces and removed
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"forward hook gets (module, (input,), output): input[0] {in_shape}, output {out_shape}, "
        + ("the very tensors" if arguments else "NOT the tensors passed and returned")
        + "; returning a tensor "
        + ("replaces" if replaces else "does NOT replace")
        + " the output; a removed hook "
        + ("no longer acts" if removed else "STILL acts"),
    )


def _grads_seen(module, x, register):
    seen = {}

    def hook(m, grad_input, grad_output):
        seen["grad_input"], seen["grad_output"] = grad_input, grad_output

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = getattr(module, register)(hook)
        x = x.clone().requires_grad_()
        out = module(x)
        out.retain_grad()
        w = torch.linspace(-1, 1, out.numel(), device=out.device).view_as(out)
        (out * w).sum().backward()
    handle.remove()
    return (
        seen,
        x.grad,
        out.grad,
        [c for c in caught if is_deprecation(c.category, str(c.message))],
    )


def check_full_backward_hook(device):
    observed, warnings_seen = [], []
    for module, shape in ((nn.Conv2d(3, 5, 3), (2, 3, 8, 8)), (TwoOps(), (7, 6))):
        module = module.to(device)
        seen, x_grad, out_grad, warned = _grads_seen(module, _x(shape, device), "register_full_backward_hook")
        warnings_seen += [str(w.message) for w in warned]
        observed.append(
            (
                type(module).__name__,
                torch.equal(seen["grad_input"][0], x_grad),
                torch.equal(seen["grad_output"][0], out_grad),
            )
        )
    return judge_full_backward_hook(observed, warnings_seen)


def judge_full_backward_hook(observed: list[tuple[str, bool, bool]], warned: list[str]) -> Finding:
    """The technique done right: register_full_backward_hook's grad_input[0] is autograd's dL/dx
    and grad_output[0] its dL/d(output), exactly, for a one-op and a multi-op module alike."""
    wrong = [name for name, grad_in, grad_out in observed if not (grad_in and grad_out)]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        "register_full_backward_hook: grad_input[0] == autograd's dL/dx and grad_output[0] == dL/dout "
        + (f"NOT for {wrong}" if wrong else "exactly")
        + f" ({', '.join(name for name, _, _ in observed)}); "
        + (f"warned: {warned[0][:100]}" if warned else "no warning"),
    )


def check_notes_backward_hook(device):
    conv = nn.Conv2d(3, 5, 3).to(device)
    seen, x_grad, out_grad, warned = _grads_seen(conv, _x((2, 3, 8, 8), device), "register_backward_hook")
    conv_ok = torch.equal(seen["grad_input"][0], x_grad) and torch.equal(seen["grad_output"][0], out_grad)
    two = TwoOps().to(device)
    seen, x_grad, out_grad, warned = _grads_seen(two, _x((7, 6), device), "register_backward_hook")
    got = seen["grad_input"][0]
    wrong_shape = got.shape != x_grad.shape
    off = float("inf") if wrong_shape else (got - x_grad).abs().max().item()
    what = f"shape {tuple(got.shape)} vs dL/dx {tuple(x_grad.shape)}" + (
        "" if wrong_shape else f", off by {off:.3g}"
    )
    documented = "deprecated" in (nn.Module.register_backward_hook.__doc__ or "")
    warning = f"{warned[0].category.__name__}: '{warned[0].message.args[0]}'" if warned else ""
    return judge_notes_backward_hook(conv_ok, off, warning, what, documented)


def judge_notes_backward_hook(
    one_op_right: bool, multi_op_off: float, warning: str, what: str, documented: bool = False
) -> Finding:
    """The notes' register_backward_hook on their one-op layer (a conv) sees the true grads: the
    technique as they use it. On a module of several ops it reports the last op's grads, which
    torch deprecates for register_full_backward_hook: a deprecated API of the notes, an erratum."""
    errata = ()
    if warning or documented or multi_op_off > 0:
        errata = (
            Erratum(
                ErratumKind.DEPRECATED_API,
                "net.conv2.register_backward_hook(printgrad)",
                (f"warns {warning[:300]}; " if warning else "")
                + (
                    "its docstring: 'deprecated in favor of register_full_backward_hook'; "
                    if documented
                    else ""
                )
                + (
                    f"on relu(linear(x))·2 its grad_input[0] is not dL/dx ({what})"
                    if multi_op_off > 0
                    else ""
                ),
            ),
        )
    return Finding(
        Verdict.HOLDS if one_op_right else Verdict.FAILS,
        "register_backward_hook on conv2 (one op, as in the notes) sees "
        + ("dL/dx and dL/dout exactly" if one_op_right else "grads that DIFFER from autograd's"),
        errata,
    )


CASE = Case(
    id="autograd.hooks",
    tier=3,
    claim="register_forward_hook sees a layer's input/output and register_backward_hook its grad_input/"
    "grad_output.",
    source="001 hook",
    claims=(
        Claim(
            "forward_hook",
            "在各层中监控输入输出　（hook 机制） … # input is a tuple of packed tensor … "
            "net.conv2.register_forward_hook(printnorm) # when call forward, the function will be called",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="a forward hook on a layer (a Conv2d as the notes' conv2) is called on each forward with "
            "(module, input tuple, output), input[0] the tensor passed",
        ),
        Claim(
            "backward_hook",
            "# input and output are tuples … net.conv2.register_backward_hook(printgrad)",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="register_backward_hook on the notes' one-op layer (a Conv2d as conv2) gets grad_input "
            "and grad_output tuples whose [0] are dL/d(input) and dL/d(output)",
        ),
    ),
    checks={
        "forward_hook": Check(check_forward_hook, claim="forward_hook"),
        # register_full_backward_hook is the replacement the notes do not mention: context.
        "full_backward_hook": Check(check_full_backward_hook),
        "notes_backward_hook": Check(check_notes_backward_hook, claim="backward_hook"),
    },
)
