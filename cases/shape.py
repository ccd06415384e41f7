"""Shape operations as the notes state them (002 补充, 003, 004 items 18 and 31): `unsqueeze`,
`cat` vs `stack`, `bmm`, advanced indexing with `None`, `nn.Flatten` vs `torch.flatten`."""

from __future__ import annotations

import inspect

import torch

from cases.spec import Case, Check, Finding, Verdict


def _randn(shape, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(device)


def check_unsqueeze(device):
    x = _randn((2, 3), device)
    assert x.unsqueeze(0).shape == (1, 2, 3) and x.unsqueeze(1).shape == (2, 1, 3)
    assert x.unsqueeze(-1).shape == (2, 3, 1) and x.unsqueeze(0).data_ptr() == x.data_ptr()
    return Finding(Verdict.HOLDS, "(2,3).unsqueeze(0) → (1,2,3), unsqueeze(1) → (2,1,3), as stated; a view")


def check_cat_stack(device):
    xs = [_randn((2, 3), device, seed) for seed in range(4)]
    for dim in range(3):  # "dim between 0 and the number of dims of the tensors (inclusive)"
        s = torch.stack(xs, dim)
        assert s.shape[dim] == 4 and s.dim() == 3
        assert torch.equal(s, torch.cat([x.unsqueeze(dim) for x in xs], dim))
    try:
        torch.stack(xs, 3)
        out_of_range = False
    except IndexError:
        out_of_range = True
    assert out_of_range, "stack(dim=ndim+1) should raise"
    assert torch.cat(xs, 0).shape == (8, 3) and torch.cat(xs, 1).shape == (2, 12)
    return Finding(
        Verdict.HOLDS,
        "stack adds a new dim of size len(seq) at any dim in [0, ndim] (= cat of unsqueezed tensors), "
        "dim=ndim+1 raises; cat grows an existing dim: (2,3)×4 → (8,3) / (2,12)",
    )


def check_bmm(device):
    x, y = _randn((5, 2, 3), device, 1), _randn((5, 3, 4), device, 2)
    out = torch.bmm(x, y)
    assert out.shape == (5, 2, 4)
    torch.testing.assert_close(out, torch.stack([x[i] @ y[i] for i in range(5)]), rtol=1e-5, atol=1e-6)
    try:
        torch.bmm(x[:1], y)
        broadcasts = True
    except RuntimeError:
        broadcasts = False
    assert not broadcasts and torch.matmul(x[:1], y).shape == (5, 2, 4)
    return Finding(
        Verdict.HOLDS,
        "bmm (n,a,b)·(n,b,c) → (n,a,c) equals per-batch matmul; unlike matmul it "
        "does not broadcast the batch dim ((1,2,3)·(5,3,4) raises)",
    )


def check_index_none(device):
    """003: `y = x[[0, 2], None]  # 相当于 y = x[[0, 2]].view(-1, 1)` for x = tensor([1, 2, 3])."""
    x = torch.tensor([1, 2, 3], device=device)
    y = x[[0, 2], None]
    assert y.shape == (2, 1) and torch.equal(y, x[[0, 2]].view(-1, 1))
    assert y.data_ptr() != x.data_ptr(), "advanced indexing should copy"
    m = _randn((3, 4), device)
    assert m[[0, 2], None].shape == (2, 1, 4) and m[[0, 2]].view(-1, 1).shape == (8, 1)
    return Finding(
        Verdict.HOLDS,
        "for the notes' 1-D x, x[[0,2], None] has shape (2,1) and equals x[[0,2]].view(-1,1) (a copy, "
        "not a view); for a 2-D x the two differ: (2,1,4) vs (8,1) — None inserts a dim, view flattens",
    )


def check_flatten(device):
    x = _randn((2, 3, 4, 5), device)
    assert torch.nn.Flatten()(x).shape == (2, 60) and torch.flatten(x).shape == (120,)
    params = inspect.signature(torch.nn.Flatten).parameters
    assert params["start_dim"].default == 1 and params["end_dim"].default == -1
    try:
        compile("nn.Flatten(dim=1,dim=-1)", "<notes>", "eval")
        valid = True
    except SyntaxError:
        valid = False
    assert not valid
    return Finding(
        Verdict.HOLDS,
        "nn.Flatten() keeps dim 0 ((2,3,4,5) → (2,60), start_dim=1) and torch.flatten flattens all "
        "((120,), start_dim=0), as stated; the notes' spelling nn.Flatten(dim=1,dim=-1) is a SyntaxError "
        "(repeated keyword): the parameters are start_dim=1, end_dim=-1",
    )


CASE = Case(
    id="shape.ops",
    tier=3,
    claim="unsqueeze inserts a size-1 dim; stack adds a dim, cat extends one; bmm (n,a,b)(n,b,c)→(n,a,c); "
    "x[[0,2], None] == x[[0,2]].view(-1,1); nn.Flatten starts at dim 1, torch.flatten at 0.",
    source="002 补充; 003; 004 items 18, 31",
    checks={
        "unsqueeze": Check(check_unsqueeze),
        "cat_stack": Check(check_cat_stack),
        "bmm": Check(check_bmm),
        "index_none": Check(check_index_none),
        "flatten": Check(check_flatten),
    },
)
