"""`nn.ModuleList` vs `nn.Sequential` (notes 004 "两种容器").

The notes build both from ``[layer for _ in range(n)]``: a list holding the *same* module object n
times, so the "n layers" share one weight and one bias. A module per entry (``copy.deepcopy``)
makes n layers.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict
from notes import parse

N = 4
# 004's net1 (`class net1(nn.Module):#ModuleList`) and net2, one snippet.
NOTES_CLASSES = "004#8"


def notes_classes() -> dict:
    """004's net1 and net2 from the notes package as written, with its one slip repaired: the C comment
    `//Sequential` after the class line (a SyntaxError, the notes' snippets check's erratum) read
    as `#Sequential`."""
    code = parse.snippet_text(NOTES_CLASSES).replace(
        "class net2(nn.Module)://Sequential", "class net2(nn.Module):#Sequential"
    )
    scope = {"nn": nn}
    exec(code, scope)  # noqa: S102 - the notes' own text
    return {"Net1": scope["net1"], "Net2": scope["net2"]}


class Net1Fixed(nn.Module):
    """net1 with a module per entry."""

    def __init__(self, layer, n):
        super().__init__()
        self.net = nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])

    def forward(self, x):
        for layer in self.net:
            x = layer(x)
        return x


class PlainList(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = [nn.Linear(5, 5) for _ in range(n)]  # a Python list: not registered


def _distinct(module):
    params = list(module.parameters())
    return len(params), len({p.data_ptr() for p in params}), sum(p.numel() for p in params)


def check_shared_layer(device):
    classes = {**notes_classes(), "Net1Fixed": Net1Fixed}
    layer = nn.Linear(5, 5).to(device)
    rows = {}
    for name, cls in classes.items():
        net = cls(layer, N)
        n_params, n_storages, numel = _distinct(net)
        rows[name] = (n_params, n_storages, numel, len(net.state_dict()))
    # Sharing made visible: a change to "layer 0" of the notes' net1 shows up in "layer 3".
    net = classes["Net1"](nn.Linear(5, 5).to(device), N)
    before = net.net[N - 1].weight.detach().clone()
    with torch.no_grad():
        net.net[0].weight.add_(1.0)
    aliased = torch.equal(net.net[N - 1].weight, before + 1.0)
    return judge_shared_layer(rows, aliased)


def judge_shared_layer(rows: dict, aliased: bool = False) -> Finding:
    """The notes' net1/net2(layer, n) as the classic way to build an n-layer network: holds where
    their n entries are n layers (as many distinct parameter tensors as a module per entry gives,
    2n for a Linear), fails where they repeat one module (fewer distinct tensors), the evidence
    saying that a deepcopy per entry gives the n layers. The deepcopy form not giving 2n distinct
    tensors fails too: then nothing here builds n layers."""
    notes, fixed = rows["Net1"], rows["Net1Fixed"]
    seq = rows.get("Net2", notes)
    fixed_distinct = fixed[1] == 2 * N
    notes_distinct = notes[1] == fixed[1] and seq[1] == fixed[1]
    ok = fixed_distinct and notes_distinct
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"the notes' net1 (ModuleList) and net2 (Sequential) from [layer for _ in range({N})] hold "
        f"{notes[1]} and {seq[1]} distinct parameter tensors ({notes[2]} and {seq[2]} numbers)"
        + (
            ""
            if notes_distinct
            else f": one Linear applied {N} times, not {N} layers"
            + (f" (adding 1 to layer 0's weight changed layer {N - 1}'s)" if aliased else "")
            + f", though state_dict lists {notes[3]} keys"
        )
        + f"; with a module per entry (copy.deepcopy(layer)) the stack has {fixed[1]} "
        f"({fixed[2]} numbers)"
        + (": use that" if fixed_distinct and not notes_distinct else "")
        + ("" if fixed_distinct else ": NOT N distinct layers"),
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
            "没有自定义执行顺序,需要在forward函数中人为指定执行顺序"
            " … 很好的将python内置的列表和容器结合"
            " … 按照Sequential的顺序自动执行forward函数",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="a ModuleList has no forward of its own (forward must loop over it) and registers "
            "what it holds, where a Python list does not; a Sequential runs its modules in order",
        ),
        Claim(
            "n_layers",
            "e.g. 最经典的两种用法"
            " … self.net = nn.ModuleList([layer for _ in range(n)])"
            " … self.list = [layer for _ in range(n)]",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the notes' net1(layer, n) and net2(layer, n) build a network of n layers",
        ),
    ),
    checks={
        "shared_layer": Check(check_shared_layer, claim="n_layers"),
        "modulelist_vs_sequential": Check(check_modulelist_vs_sequential, claim="order"),
    },
)
