"""`nn.ModuleList` vs `nn.Sequential` (notes 004 "两种容器").

The notes build both from ``[layer for _ in range(n)]``: a list holding the *same* module object n
times, so the "n layers" share one weight and one bias. The corrected form makes n modules.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict

N = 4


class Net1(nn.Module):  # the notes' ModuleList version
    def __init__(self, layer, n):
        super().__init__()
        self.net = nn.ModuleList([layer for _ in range(n)])

    def forward(self, x):
        for layer in self.net:
            x = layer(x)
        return x


class Net2(nn.Module):  # the notes' Sequential version
    def __init__(self, layer, n):
        super().__init__()
        self.list = [layer for _ in range(n)]
        self.net = nn.Sequential(*self.list)

    def forward(self, x):
        return self.net(x)


class Net1Fixed(Net1):
    def __init__(self, layer, n):
        nn.Module.__init__(self)
        self.net = nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])


class PlainList(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = [nn.Linear(5, 5) for _ in range(n)]  # a Python list: not registered


def _distinct(module):
    params = list(module.parameters())
    return len(params), len({p.data_ptr() for p in params}), sum(p.numel() for p in params)


def check_shared_layer(device):
    layer = nn.Linear(5, 5).to(device)
    rows = {}
    for cls in (Net1, Net2, Net1Fixed):
        net = cls(layer, N)
        n_params, n_storages, numel = _distinct(net)
        state_keys = len(net.state_dict())
        rows[cls.__name__] = (n_params, n_storages, numel, state_keys)
    assert rows["Net1"][:3] == rows["Net2"][:3] == (2, 2, 30), rows
    assert rows["Net1Fixed"][:3] == (2 * N, 2 * N, 30 * N), rows
    # Sharing made visible: one optimizer step on Net1 changes "all N layers" at once.
    net = Net1(nn.Linear(5, 5).to(device), N)
    before = net.net[3].weight.detach().clone()
    with torch.no_grad():
        net.net[0].weight.add_(1.0)
    assert torch.equal(net.net[3].weight, before + 1.0), "layer 3 should be layer 0"
    try:
        compile("class net2(nn.Module)://Sequential\n  pass\n", "<notes>", "exec")
        comment_error = ""
    except SyntaxError as exc:
        comment_error = f"SyntaxError ({exc.msg})"
    return judge_shared_layer(rows, comment_error)


def judge_shared_layer(rows: dict, comment_error: str) -> Finding:
    """The technique: a stack of N layers in a ModuleList or Sequential, N distinct layers when each
    entry is its own module (deepcopy). The notes' [layer for _ in range(n)] repeats one module, so
    their "classic usage" shares one layer's weights N times: a wrong statement of the notes. Their
    `//Sequential` comment is C syntax in Python: a typo."""
    shared, fixed = rows["Net1"], rows["Net1Fixed"]
    errata = []
    if shared[1] < fixed[1]:
        errata.append(
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "self.net = nn.ModuleList([layer for _ in range(n)])",
                f"{N} entries but {shared[1]} parameter tensors ({shared[2]} numbers): one Linear applied "
                f"{N} times (state_dict still lists {shared[3]} keys)",
            )
        )
    if comment_error:
        errata.append(Erratum(ErratumKind.TYPO, "class net2(nn.Module)://Sequential", comment_error))
    distinct = fixed[1] == 2 * N
    return Finding(
        Verdict.HOLDS if distinct else Verdict.FAILS,
        f"with a module per entry (deepcopy) the stack has {fixed[0]} parameter tensors ({fixed[2]} numbers)"
        + ("" if distinct else ": NOT N distinct layers")
        + f"; the notes' list comprehension gives {shared[0]} ({shared[2]} numbers)",
        tuple(errata),
    )


def check_modulelist_vs_sequential(device):
    layers = [nn.Linear(5, 5).to(device) for _ in range(N)]
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(0)).to(device)
    as_list, as_seq = nn.ModuleList(layers), nn.Sequential(*layers)
    manual = x
    for layer in as_list:
        manual = layer(manual)
    assert torch.equal(as_seq(x), manual), "Sequential should run its modules in order"
    try:
        as_list(x)
        callable_list = True
    except NotImplementedError:
        callable_list = False
    assert not callable_list, "ModuleList has no forward"
    residual = x
    for layer in as_list:  # what ModuleList is for: a custom order, e.g. residual connections
        residual = residual + layer(residual)
    assert not torch.equal(residual, manual)
    plain = PlainList(N)
    assert len(list(plain.parameters())) == 0, "a Python list of modules is invisible to parameters()"
    assert len(list(as_list.parameters())) == len(list(as_seq.parameters())) == 2 * N
    return Finding(
        Verdict.HOLDS,
        f"Sequential runs its {N} layers in order (equal to a manual loop over the ModuleList); calling a "
        f"ModuleList raises NotImplementedError; both register {2 * N} parameters, a Python list registers 0",
    )


CASE = Case(
    id="nn.containers",
    tier=3,
    claim="nn.ModuleList needs an explicit forward loop, nn.Sequential runs in order; "
    "both built as [layer for _ in range(n)] give an n-layer network.",
    source="004 两种容器",
    checks={
        "shared_layer": Check(check_shared_layer),
        "modulelist_vs_sequential": Check(check_modulelist_vs_sequential),
    },
)
