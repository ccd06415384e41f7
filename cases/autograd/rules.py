"""Autograd rules from the notes, each as observed behaviour (notes 001 "Auto-grad", 002 计算图, 004 detach).

* requires_grad propagates if any input requires it (001, quoting the docs);
* an in-place op on a leaf that requires grad raises (002);
* a second backward needs ``retain_graph`` (002);
* ``detach`` shares storage, ``clone`` does not; ``detach_`` on a view raises (004);
* index assignment and autograd: 000 says assignment makes gradients impossible, 001 adds that
  backward supports assignment. The two versions disagree; the check says which is right.
"""

from __future__ import annotations

import torch

from cases.spec import Case, Check, Finding, Verdict


def _randn(*shape, device, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def _raises(fn, exc=RuntimeError) -> str | None:
    try:
        fn()
    except exc as e:
        return str(e)
    return None


def check_requires_grad_propagation(device):
    a = _randn(3, device=device).requires_grad_()
    b = _randn(3, device=device, seed=1)
    c = _randn(3, device=device, seed=2)
    assert (a * b).requires_grad and (b + a).requires_grad, "one input requiring grad should propagate"
    assert not (b * c).requires_grad, "no input requiring grad: the output should not require it"
    with torch.no_grad():
        assert not (a * b).requires_grad, "under no_grad nothing requires grad"
    assert (a * b).grad_fn is not None and (b * c).grad_fn is None
    return Finding(Verdict.HOLDS, "a·b requires grad when a does; b·c does not; under no_grad neither")


def check_inplace_on_leaf(device):
    leaf = _randn(4, device=device).requires_grad_()
    message = _raises(lambda: leaf.add_(1))
    assert message and "leaf Variable that requires grad" in message, message
    before = leaf.detach().clone()
    with torch.no_grad():
        leaf.add_(1)  # how initialisers and optimizers modify leaves
    assert torch.equal(leaf.detach(), before + 1)
    nonleaf = leaf * 2
    nonleaf.add_(1)  # allowed: not a leaf, and mul does not need its output for backward
    nonleaf.sum().backward()
    assert torch.equal(leaf.grad, torch.full_like(leaf, 2.0))
    return Finding(
        Verdict.HOLDS,
        f"leaf.add_(1) raises RuntimeError ('{message[:60]}…'); allowed under no_grad and on non-leaves",
    )


def check_retain_graph(device):
    x = _randn(5, device=device).requires_grad_()
    y = (x * x).sum()
    y.backward()
    message = _raises(y.backward)
    assert message and "second time" in message, message
    x.grad = None
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert torch.allclose(x.grad, 4 * x.detach()), "two backwards should accumulate 2·2x"
    # A graph that saved no tensors (sum's backward only needs the shape) can be run twice anyway.
    s = x.sum()
    s.backward()
    s_twice = _raises(s.backward) is None
    assert s_twice, "sum() saves no tensors; its graph should survive a second backward"
    return Finding(
        Verdict.HOLDS,
        "second backward through (x·x).sum() raises 'backward through the graph a second time'; with "
        "retain_graph=True it runs and grads accumulate to 4x; x.sum() (no saved tensors) needs no retain",
    )


def check_detach_clone(device):
    x = _randn(6, device=device).requires_grad_()
    y = x * 3
    d, c = y.detach(), y.clone()
    assert d.data_ptr() == y.data_ptr() and not d.requires_grad, "detach should share storage"
    assert c.data_ptr() != y.data_ptr() and c.requires_grad, "clone should copy and stay in the graph"
    d[0] = 100.0  # visible through y: the storage is shared
    assert y[0].item() == 100.0
    label = y.clone().detach()  # the notes' idiom: a private, graph-free copy
    assert label.data_ptr() != y.data_ptr() and not label.requires_grad
    (c * 1).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 3.0)), "clone passes gradient through"
    return Finding(
        Verdict.HOLDS,
        "detach() shares data_ptr (a write through it shows in y); clone() copies "
        "and keeps the graph (grad 3 reaches x); clone().detach() is a private copy",
    )


def check_detach_view_inplace(device):
    base = _randn(4, 4, device=device).requires_grad_() * 1
    view = base[:2]
    message = _raises(view.detach_)
    assert message and "views in-place" in message, message
    whole = base.detach_()  # a non-view non-leaf: becomes a leaf without grad
    assert whole.is_leaf and not whole.requires_grad and whole.grad_fn is None
    return Finding(Verdict.HOLDS, f"view.detach_() raises ('{message[:45]}…'); detach_() on a non-view works")


def check_index_assignment(device):
    x = _randn(5, device=device).requires_grad_()
    z = _randn(1, device=device, seed=3).requires_grad_()
    y = x * 2
    y[0] = 0.0  # constant assignment: no gradient to x[0]
    y[1] = z[0] * 3  # assignment of a value that requires grad: gradient flows to z
    (y * torch.arange(1.0, 6.0, device=device)).sum().backward()
    w = torch.arange(1.0, 6.0, device=device)
    expected_x = 2 * w
    expected_x[:2] = 0
    assert torch.equal(x.grad, expected_x), f"grad through assignment: {x.grad} vs {expected_x}"
    assert torch.equal(z.grad, torch.tensor([3.0 * 2], device=device)), z.grad
    # The one assignment that does fail: writing into a leaf that requires grad.
    leaf_message = _raises(lambda: x.__setitem__(0, 0.0))
    assert leaf_message and "leaf Variable" in leaf_message
    return Finding(
        Verdict.HOLDS,
        "001 is right, 000 is wrong: after y[0]=0, y[1]=3z backward gives x.grad=[0,0,6,8,10] and "
        "z.grad=6 (exact); only assigning into a leaf that requires grad raises",
    )


CASE = Case(
    id="autograd.rules",
    tier=3,
    claim="requires_grad propagates from any input; in-place ops on grad-requiring leaves raise; a second "
    "backward needs retain_graph; detach shares storage, clone does not; views cannot be detach_()ed; "
    "backward supports index assignment.",
    source="001 Auto-grad, 002 计算图, 004 Tensor.detach",
    checks={
        "requires_grad_propagation": Check(check_requires_grad_propagation),
        "inplace_on_leaf": Check(check_inplace_on_leaf),
        "retain_graph": Check(check_retain_graph),
        "detach_clone": Check(check_detach_clone),
        "detach_view_inplace": Check(check_detach_view_inplace),
        "index_assignment": Check(check_index_assignment),
    },
)
