"""Autograd rules from the notes, each as observed behaviour (notes 001 "Auto-grad", 002 计算图, 004 detach).

* requires_grad propagates if any input requires it (001, quoting the docs);
* an in-place op on a leaf that requires grad raises (002);
* a second backward needs ``retain_graph`` (002);
* ``detach`` shares storage, ``clone`` does not; ``detach_`` on a view raises (004);
* index assignment and autograd: 000 and 001 say assignment makes gradients impossible, 001 adds
  that backward supports assignment. Each statement is a claim; the same observation decides both;
* in general only leaf nodes have ``.grad``, a non-leaf keeps one with ``retain_grad()`` (002).
"""

from __future__ import annotations

import torch

from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict


def _randn(*shape, device, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def _raises(fn, exc=RuntimeError) -> str | None:
    try:
        fn()
    except exc as e:
        return str(e)
    return None


def judge_rule(rule: str, observed: dict[str, bool], detail: str = "") -> Finding:
    """One rule the notes state, as observed: it holds when every observation that makes it up
    came out as the rule says, and fails naming those that did not."""
    wrong = [name for name, ok in observed.items() if not ok]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        f"{rule}: " + (f"NOT observed: {'; '.join(wrong)}" if wrong else "; ".join(observed)) + detail,
    )


def check_requires_grad_propagation(device):
    a = _randn(3, device=device).requires_grad_()
    b = _randn(3, device=device, seed=1)
    c = _randn(3, device=device, seed=2)
    with torch.no_grad():
        under_no_grad = (a * b).requires_grad
    return judge_rule(
        "requires_grad propagates from any input",
        {
            "a·b and b+a require grad when a does": (a * b).requires_grad and (b + a).requires_grad,
            "b·c does not when neither does": not (b * c).requires_grad,
            "nothing requires grad under no_grad": not under_no_grad,
            "only the graph-connected output has a grad_fn": (a * b).grad_fn is not None
            and (b * c).grad_fn is None,
        },
    )


def check_inplace_on_leaf(device):
    leaf = _randn(4, device=device).requires_grad_()
    message = _raises(lambda: leaf.add_(1))
    before = leaf.detach().clone()
    with torch.no_grad():
        leaf.add_(1)  # how initialisers and optimizers modify leaves
    nonleaf = leaf * 2
    nonleaf.add_(1)  # allowed: not a leaf, and mul does not need its output for backward
    nonleaf.sum().backward()
    return judge_rule(
        "an in-place op on a leaf that requires grad raises",
        {
            "leaf.add_(1) raises RuntimeError": bool(
                message and "leaf Variable that requires grad" in message
            ),
            "under no_grad it is allowed": torch.equal(leaf.detach(), before + 1),
            "on a non-leaf it is allowed, grads exact": torch.equal(leaf.grad, torch.full_like(leaf, 2.0)),
        },
        f" ('{(message or '')[:60]}…')",
    )


def check_retain_graph(device):
    x = _randn(5, device=device).requires_grad_()
    y = (x * x).sum()
    y.backward()
    message = _raises(y.backward)
    x.grad = None
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    # Two backwards of Σx² accumulate 2x + 2x, each 2x itself x + x: doublings, exact in binary.
    accumulated = torch.equal(x.grad, 4 * x.detach())
    # A graph that saved no tensors (sum's backward only needs the shape) can be run twice anyway.
    s = x.sum()
    s.backward()
    return judge_rule(
        "a second backward needs retain_graph",
        {
            "a second backward through (x·x).sum() raises": bool(message and "second time" in message),
            "with retain_graph=True it runs and grads accumulate to 4x": accumulated,
            "x.sum() (no saved tensors) needs no retain": _raises(s.backward) is None,
        },
    )


def check_detach_clone(device):
    x = _randn(6, device=device).requires_grad_()
    y = x * 3
    d, c = y.detach(), y.clone()
    shares = d.data_ptr() == y.data_ptr() and not d.requires_grad
    copies = c.data_ptr() != y.data_ptr() and c.requires_grad
    d[0] = 100.0  # visible through y: the storage is shared
    label = y.clone().detach()  # the notes' idiom: a private, graph-free copy
    (c * 1).sum().backward()
    return judge_rule(
        "detach shares storage, clone does not",
        {
            "detach() shares data_ptr and does not require grad": shares,
            "a write through detach() shows in y": y[0].item() == 100.0,
            "clone() copies and stays in the graph": copies,
            "clone() passes grad 3 to x": torch.equal(x.grad, torch.full_like(x, 3.0)),
            "clone().detach() is a private, graph-free copy": label.data_ptr() != y.data_ptr()
            and not label.requires_grad,
        },
    )


def check_detach_view_inplace(device):
    base = _randn(4, 4, device=device).requires_grad_() * 1
    view = base[:2]
    message = _raises(view.detach_)
    whole = base.detach_()  # a non-view non-leaf: becomes a leaf without grad
    return judge_rule(
        "detach_() on a view raises",
        {
            "view.detach_() raises": bool(message and "views in-place" in message),
            "detach_() on a non-view makes a leaf without grad": whole.is_leaf
            and not whole.requires_grad
            and whole.grad_fn is None,
        },
        f" ('{(message or '')[:45]}…')",
    )


def check_leaf_grad(device):
    """002: "一般只有leaf node有grad" — in general only leaves get .grad; retain_grad() is the
    exception for a non-leaf."""
    import warnings

    x = _randn(5, device=device).requires_grad_()
    h = torch.tanh(x)
    loss = (h * h).sum()
    loss.backward(retain_graph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nonleaf_grad = h.grad
    warned = [str(w.message) for w in caught if "not a leaf" in str(w.message)]
    leaf_grad = x.grad is not None
    x.grad = None
    h.retain_grad()
    loss.backward()
    # d(Σh²)/dh = 2h, exact in fp32 (a doubling).
    retained = h.grad is not None and torch.equal(h.grad, 2 * h.detach())
    return judge_leaf_grad(leaf_grad, nonleaf_grad is None, warned[0] if warned else "", retained)


def judge_leaf_grad(
    leaf_has_grad: bool, nonleaf_grad_none: bool, warning: str, retained_exact: bool
) -> Finding:
    """002's rule: after backward a leaf that requires grad has .grad, a non-leaf has None (torch
    warns when it is read); retain_grad() makes a non-leaf keep its gradient, the exact dL/dh."""
    ok = leaf_has_grad and nonleaf_grad_none and retained_exact
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        "after backward: the leaf x "
        + ("has" if leaf_has_grad else "has NO")
        + " .grad; the non-leaf h = tanh(x) has "
        + ("None" if nonleaf_grad_none else "a .grad (NOT None)")
        + (f" (reading it warns: '{warning[:90]}…')" if warning else "")
        + "; after h.retain_grad() its .grad "
        + ("is dL/dh = 2h exactly" if retained_exact else "is NOT dL/dh"),
    )


def check_index_assignment(device):
    x = _randn(5, device=device).requires_grad_()
    z = _randn(1, device=device, seed=3).requires_grad_()
    y = x * 2
    y[0] = 0.0  # constant assignment: no gradient to x[0]
    y[1] = z[0] * 3  # assignment of a value that requires grad: gradient flows to z
    w = torch.arange(1.0, 6.0, device=device)
    (y * w).sum().backward()
    expected_x = 2 * w
    expected_x[:2] = 0
    # Every gradient here is a product of small integers and one z: exact in fp32.
    x_exact = torch.equal(x.grad, expected_x)
    z_exact = torch.equal(z.grad, torch.tensor([3.0 * 2], device=device))
    # The one assignment that does fail: writing into a leaf that requires grad.
    leaf_message = _raises(lambda: x.__setitem__(0, 0.0))
    return judge_index_assignment(
        x_exact, z_exact, bool(leaf_message and "leaf Variable" in leaf_message), x.grad.tolist()
    )


def judge_index_assignment(x_exact: bool, z_exact: bool, leaf_raises: bool, x_grad: list[float]) -> Finding:
    """001: "pytorch 反向传播支持赋值操作": index assignment into a non-leaf works under autograd, the
    gradients exact (a constant written cuts its slot, a value that requires grad passes it); only
    writing into a leaf that requires grad raises."""
    ok = x_exact and z_exact and leaf_raises
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        "gradients through index assignment "
        + ("are exact" if x_exact and z_exact else "are NOT as expected")
        + f" (x.grad = {x_grad}); assigning into a leaf that requires grad "
        + ("raises" if leaf_raises else "does NOT raise"),
    )


def check_assignment_no_gradient(device):
    """000 and 001: "其实赋值的话根本没办法算梯度" — with assignment the gradient cannot be computed
    at all. The same observation as `check_index_assignment`, read against that statement."""
    x = _randn(5, device=device).requires_grad_()
    z = _randn(1, device=device, seed=3).requires_grad_()
    y = x * 2
    y[0] = 0.0
    y[1] = z[0] * 3
    w = torch.arange(1.0, 6.0, device=device)
    (y * w).sum().backward()
    expected_x = 2 * w
    expected_x[:2] = 0
    # Products of small integers and one z: exact in fp32.
    computed = torch.equal(x.grad, expected_x) and torch.equal(z.grad, torch.tensor([6.0], device=device))
    return judge_assignment_no_gradient(computed, x.grad.tolist(), z.grad.item())


def judge_assignment_no_gradient(computed: bool, x_grad: list[float], z_grad: float) -> Finding:
    """The notes' statement holds only where a backward through an index assignment gives no
    gradient (or a wrong one); it fails where autograd's gradients through it are exact."""
    return Finding(
        Verdict.FAILS if computed else Verdict.HOLDS,
        f"after y = 2x, y[0] = 0, y[1] = 3z, backward of Σ y·[1..5] gives x.grad = {x_grad}, "
        f"z.grad = {z_grad:g}: "
        + (
            "exact, autograd differentiates through the assignment: the statement fails (it is the "
            "in-place write into a leaf that requires grad that raises; assigning into a non-leaf is fine)"
            if computed
            else "NOT the chain rule's gradients"
        ),
    )


CASE = Case(
    id="autograd.rules",
    tier=3,
    claim="requires_grad propagates from any input; in-place ops on grad-requiring leaves raise; a second "
    "backward needs retain_graph; detach shares storage, clone does not; views cannot be detach_()ed; "
    "backward supports index assignment (not, as the notes also say, impossible to differentiate); "
    "in general only leaves have .grad (retain_grad() keeps a "
    "non-leaf's).",
    source="000/001 Auto-grad, 002 计算图, 004 Tensor.detach",
    claims=(
        Claim(
            "requires_grad_propagation",
            "If there's a single input to an operation that requires gradient, its output will also "
            "require gradient. Conversely, only if all inputs don't require gradient, the output also won't",
            "001",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "inplace_on_leaf",
            "对于leaf和require_grad的节点不能够进行inplace operation",
            "002",
            ClaimKind.BEHAVIOUR,
        ),
        Claim("retain_graph", "**retain_graph** 防止backward之后释放相关内存", "002", ClaimKind.BEHAVIOUR),
        Claim(
            "detach_clone",
            "`torch.detach()` … **Returns a new Tensor** with the same storage memory … "
            "label = ids.clone().detach() … PS : `torch.clone()`并不共享内存",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="detach() returns a tensor sharing the storage, outside the graph; clone() copies "
            "(and stays in the graph); clone().detach() is a private graph-free copy",
        ),
        Claim(
            "detach_view_inplace",
            "`torch.detach_()` … Detaches the Tensor from the graph that created it, making it a leaf. "
            "Views cannot be detached in-place.",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim("index_assignment", "pytorch 反向传播支持赋值操作", "001", ClaimKind.BEHAVIOUR),
        Claim(
            "assignment_no_gradient",
            "尽量减少对矩阵的直接赋值(其实赋值的话根本没办法算梯度)",
            "000",
            ClaimKind.BEHAVIOUR,
            reading="000 and 001 both: after assigning into a tensor, its gradient cannot be computed at all",
        ),
        Claim("leaf_grad", "一般只有leaf node有grad", "002", ClaimKind.BEHAVIOUR),
    ),
    checks={
        "requires_grad_propagation": Check(
            check_requires_grad_propagation, claim="requires_grad_propagation"
        ),
        "inplace_on_leaf": Check(check_inplace_on_leaf, claim="inplace_on_leaf"),
        "retain_graph": Check(check_retain_graph, claim="retain_graph"),
        "detach_clone": Check(check_detach_clone, claim="detach_clone"),
        "detach_view_inplace": Check(check_detach_view_inplace, claim="detach_view_inplace"),
        "index_assignment": Check(check_index_assignment, claim="index_assignment"),
        "assignment_no_gradient": Check(check_assignment_no_gradient, claim="assignment_no_gradient"),
        "leaf_grad": Check(check_leaf_grad, claim="leaf_grad"),
    },
)
