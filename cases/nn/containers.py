"""`nn.ModuleList` vs `nn.Sequential` (notes 004 "两种容器").

The notes build both from ``[layer for _ in range(n)]``: a list holding the *same* module object n
times, so the "n layers" share one weight and one bias. The corrected form makes n modules.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict

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
    # Sharing made visible: a change to "layer 0" of the notes' Net1 shows up in "layer 3".
    net = Net1(nn.Linear(5, 5).to(device), N)
    before = net.net[N - 1].weight.detach().clone()
    with torch.no_grad():
        net.net[0].weight.add_(1.0)
    aliased = torch.equal(net.net[N - 1].weight, before + 1.0)
    try:
        compile("class net2(nn.Module)://Sequential\n  pass\n", "<notes>", "exec")
        comment_error = ""
    except SyntaxError as exc:
        comment_error = f"SyntaxError ({exc.msg})"
    return judge_shared_layer(rows, comment_error, aliased)


def judge_shared_layer(rows: dict, comment_error: str, aliased: bool = False) -> Finding:
    """The technique: a stack of N layers in a ModuleList or Sequential, N distinct layers when each
    entry is its own module (deepcopy). The notes present [layer for _ in range(n)] as the classic
    way to build their n-layer net; where it repeats one module (fewer parameter tensors than the
    fixed form), that is a wrong statement of the notes. Their `//Sequential` comment is C syntax
    in Python: a typo."""
    shared, fixed = rows["Net1"], rows["Net1Fixed"]
    errata = []
    if shared[1] < fixed[1]:
        errata.append(
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "最经典的两种用法: self.net = nn.ModuleList([layer for _ in range(n)]); "
                "self.list = [layer for _ in range(n)]",
                f"{N} entries but {shared[1]} parameter tensors ({shared[2]} numbers) against {fixed[1]} "
                f"({fixed[2]}) with a module per entry: one Linear applied {N} times"
                + (f"; adding 1 to layer 0's weight changed layer {N - 1}'s" if aliased else "")
                + f" (state_dict still lists {shared[3]} keys)",
            )
        )
    if comment_error:
        errata.append(Erratum(ErratumKind.TYPO, "class net2(nn.Module)://Sequential", comment_error))
    distinct = fixed[1] == 2 * N
    return Finding(
        Verdict.HOLDS if distinct else Verdict.FAILS,
        f"with a module per entry (deepcopy) the stack has {fixed[0]} parameter tensors ({fixed[2]} numbers)"
        + ("" if distinct else ": NOT N distinct layers")
        + f"; the notes' list comprehension gives {shared[0]} ({shared[2]} numbers) in ModuleList, "
        f"{rows.get('Net2', shared)[0]} ({rows.get('Net2', shared)[2]}) in Sequential",
        tuple(errata),
    )


def check_modulelist_vs_sequential(device):
    layers = [nn.Linear(5, 5).to(device) for _ in range(N)]
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(0)).to(device)
    as_list, as_seq = nn.ModuleList(layers), nn.Sequential(*layers)
    manual = x
    for layer in as_list:
        manual = layer(manual)
    in_order = torch.equal(as_seq(x), manual)
    try:
        as_list(x)
        list_call = ""
    except NotImplementedError as exc:
        list_call = f"{type(exc).__name__}"
    residual = x
    for layer in as_list:  # what ModuleList is for: a custom order, e.g. residual connections
        residual = residual + layer(residual)
    registered = (len(list(as_list.parameters())), len(list(as_seq.parameters())))
    plain = len(list(PlainList(N).parameters()))
    return judge_modulelist_vs_sequential(
        in_order, list_call, registered, plain, not torch.equal(residual, manual)
    )


def judge_modulelist_vs_sequential(
    in_order: bool, list_call: str, registered: tuple, plain: int, residual_differs: bool
) -> Finding:
    """004: ModuleList has no order of its own (forward must loop over it), Sequential runs its
    modules in order; both register what they hold as parameters, where a Python list does not."""
    holds = in_order and bool(list_call) and registered == (2 * N, 2 * N) and plain == 0
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"Sequential {'runs' if in_order else 'does NOT run'} its {N} layers in order (vs a manual loop over "
        f"the ModuleList); calling a ModuleList "
        + (f"raises {list_call}" if list_call else "does NOT raise")
        + f"; ModuleList and Sequential register {registered[0]} and {registered[1]} parameters, a Python "
        f"list {plain}; the residual loop {'gives another result' if residual_differs else 'gives the same'}",
    )


CASE = Case(
    id="nn.containers",
    tier=3,
    claim="nn.ModuleList needs an explicit forward loop, nn.Sequential runs in order; both register their "
    "modules, and n entries are n layers only when each is its own module.",
    source="004 两种容器",
    claims=(
        Claim(
            "order",
            "nn.ModuleList (): 没有自定义执行顺序,需要在forward函数中"
            "人为指定执行顺序; 很好的将python内置的列表和容器结合; "
            "nn.Sequential (): 按照Sequential的顺序自动执行forward函数",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "n_layers",
            "最经典的两种用法: self.net = nn.ModuleList([layer for _ in range(n)]) / "
            "self.net = nn.Sequential(*self.list)",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "shared_layer": Check(check_shared_layer, claim="n_layers"),
        "modulelist_vs_sequential": Check(check_modulelist_vs_sequential, claim="order"),
    },
)
