"""Optimizer parameter groups, freezing for transfer learning, the YOLOv5 grouping and `apply()`
initialisation (notes 001 "torch.optim", "迁移学习", "apply()"; 003 yolov5 摘录).
"""

from __future__ import annotations

import torch
from torch import nn

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict


def _net(device, seed=0):
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3),
        nn.BatchNorm2d(8),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 5),
    ).to(device)
    torch.random.set_rng_state(state)
    return net


def yolov5_groups(model):
    """The notes' loop, verbatim in substance."""
    g0, g1, g2 = [], [], []
    for v in model.modules():
        if hasattr(v, "bias") and isinstance(v.bias, nn.Parameter):
            g2.append(v.bias)
        if isinstance(v, nn.BatchNorm2d):
            g0.append(v.weight)
        elif hasattr(v, "weight") and isinstance(v.weight, nn.Parameter):
            g1.append(v.weight)
    return g0, g1, g2


def check_yolov5_grouping(device):
    net = _net(device)
    g0, g1, g2 = yolov5_groups(net)
    lr, m, wd = 0.01, 0.9, 5e-4
    opt = torch.optim.SGD(g0, lr=lr, momentum=m, nesterov=True)
    opt.add_param_group({"params": g1, "weight_decay": wd})
    opt.add_param_group({"params": g2})
    ids = [id(p) for group in opt.param_groups for p in group["params"]]
    assert len(ids) == len(set(ids)) == len(list(net.parameters())), "each parameter in exactly one group"
    assert [g["weight_decay"] for g in opt.param_groups] == [0, wd, 0]
    assert all(p.dim() == 1 for p in g0 + g2) and all(p.dim() > 1 for p in g1)
    # One step with zero gradients: only weight decay moves anything. Nesterov SGD, first step:
    # buf = wd·p, update = wd·p + m·buf = (1+m)·wd·p, p ← p − lr·(1+m)·wd·p.
    before = [p.detach().clone() for p in net.parameters()]
    for p in net.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    decayed = {id(p) for p in g1}
    for p, b in zip(net.parameters(), before):
        if id(p) in decayed:
            torch.testing.assert_close(p.detach(), b * (1 - lr * (1 + m) * wd), rtol=1e-6, atol=0)
        else:
            assert torch.equal(p.detach(), b), "biases and BN weights should not decay"
    return Finding(
        Verdict.HOLDS,
        f"{len(ids)} parameters, each in exactly one group: {len(g0)} BN weights (no decay), {len(g1)} "
        f"conv/linear weights (decay {wd}), {len(g2)} biases (no decay); a zero-grad step shrinks only "
        f"the weights, by exactly 1−lr(1+m)wd",
    )


def check_add_param_group_errors(device):
    net = _net(device)
    opt = torch.optim.SGD(net[0].parameters(), lr=0.1)
    try:
        opt.add_param_group({"params": net[0].weight})
        dup = None
    except ValueError as e:
        dup = str(e)
    assert dup and "more than one parameter group" in dup, dup
    try:
        opt.add_param_group({"params": {net[3].weight}})
        as_set = None
    except TypeError as e:
        as_set = str(e)
    assert as_set and "ordered collections" in as_set, as_set
    opt.add_param_group({"params": net[3].parameters(), "lr": 0.5})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    opt.add_param_group({"params": net[6].parameters()})
    assert opt.param_groups[-1]["lr"] == 0.1, "a new group without lr takes the optimizer's default"
    return Finding(
        Verdict.HOLDS,
        f"duplicate → ValueError ('{dup[:40]}…'); a set → TypeError; a new group "
        "keeps its own lr or takes the defaults",
    )


def check_freezing(device):
    net = _net(device)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(4, 3, 8, 8, generator=g).to(device), torch.randn(4, 5, generator=g).to(device)
    head = net[6]
    for p in net.parameters():
        p.requires_grad_(False)
    for p in head.parameters():
        p.requires_grad_(True)
    frozen = {n: p.detach().clone() for n, p in net.named_parameters() if not p.requires_grad}

    def train(opt, steps=3):
        for _ in range(steps):
            opt.zero_grad()
            nn.functional.mse_loss(net(x), y).backward()
            opt.step()

    # The notes' two forms: only the trainable params, or all params (frozen ones have grad None).
    for params in (filter(lambda p: p.requires_grad, net.parameters()), net.parameters()):
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-2)
        train(opt)
        for n, p in net.named_parameters():
            if n in frozen:
                assert p.grad is None and torch.equal(p.detach(), frozen[n]), f"{n} moved while frozen"
    head_before = head.weight.detach().clone()
    # Unfreeze: the notes' add_param_group for a layer that was not in the filtered optimizer.
    opt = torch.optim.SGD(filter(lambda p: p.requires_grad, net.parameters()), lr=0.1)
    for p in net[3].parameters():
        p.requires_grad_(True)
    opt.add_param_group({"params": net[3].parameters()})
    conv_before = net[3].weight.detach().clone()
    train(opt, 1)
    assert not torch.equal(net[3].weight.detach(), conv_before) and not torch.equal(
        head.weight.detach(), head_before
    )
    # The claim's limit: a param frozen *after* it had a gradient keeps a stale .grad unless
    # zero_grad sets it to None; with momentum and weight decay step() still moves it.
    net2 = _net(device, seed=3)
    opt = torch.optim.SGD(net2.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2)
    nn.functional.mse_loss(net2(x), y).backward()
    opt.step()
    net2[0].weight.requires_grad_(False)
    snap = net2[0].weight.detach().clone()
    opt.zero_grad(set_to_none=False)
    nn.functional.mse_loss(net2(x), y).backward()
    opt.step()
    drift = (net2[0].weight.detach() - snap).abs().max().item()
    # The claim (asserted above): frozen params, grad None, are bit-identical after steps. Freezing
    # a param after it trained, with zero_grad(set_to_none=False), is beyond it: reported.
    return Finding(
        Verdict.HOLDS,
        f"frozen params (grad None) are bit-identical after 3 SGD(momentum, weight_decay) steps, whether or "
        "not they are in the optimizer; beyond the notes: a param frozen after training, with "
        f"zero_grad(set_to_none=False), still moves by {drift:.3g} (momentum buffer + decay): 'grad is None' "
        "is what protects it",
    )


def check_apply_init(device):
    def init_weights(m):  # the notes' function
        if isinstance(m, nn.Linear):
            m.weight.fill_(1.0)
        elif isinstance(m, nn.Conv2d):
            nn.init.xavier_normal_(m.weight)

    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).to(device)
    try:
        net.apply(init_weights)
        message = None
    except RuntimeError as e:
        message = str(e)
    with torch.no_grad():
        net.apply(init_weights)
    ones = all(torch.equal(m.weight, torch.ones(2, 2, device=device)) for m in net)
    visited = []
    net.apply(lambda m: visited.append(type(m).__name__))
    # The notes' torch.fill(size, value, dtype, device) is torch.full's signature.
    try:
        torch.fill((2, 3), 1.0)
        fill_error = None
    except TypeError as e:
        fill_error = f"TypeError ({str(e).splitlines()[0][:80]})"
    return judge_apply_init(
        ones, visited == ["Linear", "Linear", "Sequential"], message, fill_error, hasattr(net, "appply")
    )


def judge_apply_init(
    no_grad_init_ok: bool, children_first: bool, raised: str | None, fill_error: str | None, appply: bool
) -> Finding:
    """The technique: apply() runs an init function on every submodule, children before the
    parent; in-place writes to parameters belong inside torch.no_grad(). The notes' snippet slips
    are errata: fill_ on a parameter outside no_grad raises (a snippet that does not run as
    written), torch.fill is torch.full, net.appply is net.apply."""
    errata = []
    if raised:
        errata.append(
            Erratum(
                ErratumKind.TYPO,
                "def init_weights(m): … m.weight.fill_(1.0)  (no torch.no_grad())",
                f"raises under apply(): '{raised[:70]}…'",
            )
        )
    if fill_error:
        errata.append(
            Erratum(ErratumKind.TYPO, "torch.fill((2,3), 1.0)", f"{fill_error}: torch.full is meant")
        )
    if not appply:
        errata.append(Erratum(ErratumKind.TYPO, "net.appply(init_weights)", "no such method: net.apply"))
    ok = no_grad_init_ok and children_first
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        "apply(init_weights) inside torch.no_grad() "
        + ("sets every Linear's weights to 1 and visits children before the parent" if ok else "does NOT"),
        tuple(errata),
    )


CASE = Case(
    id="optim.param_groups",
    tier=3,
    claim="param_groups/add_param_group hold per-group hyper-parameters; frozen params (grad None) are not "
    "updated by step(); YOLOv5 puts biases and BN weights in groups without weight decay; apply() "
    "initialises every submodule.",
    source="001 torch.optim / 迁移学习 / apply(), 003 yolov5 摘录, 004 torch.fill",
    checks={
        "yolov5_grouping": Check(check_yolov5_grouping),
        "add_param_group_errors": Check(check_add_param_group_errors),
        "freezing": Check(check_freezing),
        "apply_init": Check(check_apply_init),
    },
)
