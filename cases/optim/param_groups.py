"""Optimizer parameter groups, freezing for transfer learning, the YOLOv5 grouping and `apply()`
initialisation (notes 001 "torch.optim", "迁移学习", "apply()"; 003 yolov5 摘录).
"""

from __future__ import annotations

import torch
from torch import nn

from cases.spec import UNIT_ROUNDOFF, Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict
from notes import parse

U32 = UNIT_ROUNDOFF[torch.float32]


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
    each_once = len(ids) == len(set(ids)) == len(list(net.parameters()))
    decays = [g["weight_decay"] for g in opt.param_groups]
    kinds_right = all(p.dim() == 1 for p in g0 + g2) and all(p.dim() > 1 for p in g1)
    # One step with zero gradients: only weight decay moves anything. Nesterov SGD, first step:
    # buf = wd·p, update = wd·p + m·buf = (1+m)·wd·p, p ← p − lr·(1+m)·wd·p.
    before = [p.detach().clone() for p in net.parameters()]
    for p in net.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    decayed = {id(p) for p in g1}
    decay_right, others_still = True, True
    for p, b in zip(net.parameters(), before):
        if id(p) in decayed:
            # The step moves p by lr·(1+m)·wd = 9.5e-6 of itself. SGD's fp32 p − lr·d rounds once to p's
            # ulp (u; d's own roundings are u of the step), the truth fl(b·fl(factor)) twice: ≤ 3u apart,
            # ×2 margin: 6u is 4% of the step, so a decay 10% off fails.
            decay_right &= torch.allclose(p.detach(), b * (1 - lr * (1 + m) * wd), rtol=6 * U32, atol=0)
        else:
            others_still &= torch.equal(p.detach(), b)
    return judge_yolov5_grouping(
        (len(g0), len(g1), len(g2)), each_once, decays, [0, wd, 0], kinds_right, decay_right, others_still
    )


def judge_yolov5_grouping(
    sizes: tuple[int, int, int],
    each_once: bool,
    decays: list[float],
    expected_decays: list[float],
    kinds_right: bool,
    decay_right: bool,
    others_still: bool,
) -> Finding:
    """The notes' YOLOv5 grouping: every parameter in exactly one group, weight decay only on
    conv/linear weights (g1), none on BN weights (g0) and biases (g2); a zero-gradient step moves
    the decayed weights by exactly the decay and nothing else."""
    observed = {
        "each parameter in exactly one group": each_once,
        f"weight decay per group {decays}": decays == expected_decays,
        "g0/g2 hold 1-d BN weights and biases, g1 the weights": kinds_right,
        "a zero-grad step shrinks g1 by exactly 1−lr(1+m)wd": decay_right,
        "and leaves biases and BN weights bit-identical": others_still,
    }
    wrong = [k for k, ok in observed.items() if not ok]
    return Finding(
        Verdict.FAILS if wrong else Verdict.HOLDS,
        f"g0/g1/g2 = {sizes[0]}/{sizes[1]}/{sizes[2]} parameters: "
        + (f"NOT observed: {'; '.join(wrong)}" if wrong else "; ".join(observed)),
    )


def check_add_param_group_errors(device):
    net = _net(device)
    opt = torch.optim.SGD(net[0].parameters(), lr=0.1)
    try:
        opt.add_param_group({"params": net[0].weight})
        dup = None
    except ValueError as e:
        dup = str(e)
    try:
        opt.add_param_group({"params": {net[3].weight}})
        as_set = None
    except TypeError as e:
        as_set = str(e)
    opt.add_param_group({"params": net[3].parameters(), "lr": 0.5})
    opt.add_param_group({"params": net[6].parameters()})
    return judge_add_param_group(
        dup,
        as_set,
        [g["lr"] for g in opt.param_groups],
        [0.1, 0.5, 0.1],
        param_group_exists=hasattr(opt, "param_group"),
    )


def judge_add_param_group(
    duplicate: str | None,
    as_set: str | None,
    lrs: list[float],
    expected_lrs: list[float],
    param_group_exists: bool = True,
) -> Finding:
    """The notes' add_param_group source: a parameter already in a group raises ValueError, a set
    raises TypeError, a new group keeps its own hyper-parameters or takes the optimizer's defaults.
    The notes' `pprint(opt.param_group)` names an attribute optimizers do not have: a typo."""
    errata = ()
    if not param_group_exists:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "通过访问 `pprint(opt.param_group)`可以查看或者修改",
                "an optimizer has no attribute `param_group` (A"
                "ttributeError); the list is `opt.param_groups`",
            ),
        )
    ok = (
        bool(duplicate and "more than one parameter group" in duplicate)
        and bool(as_set and "ordered collections" in as_set)
        and lrs == expected_lrs
    )
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"duplicate → {('ValueError (' + duplicate[:40] + '…)') if duplicate else 'no error'}; a set → "
        f"{('TypeError (' + as_set[:40] + '…)') if as_set else 'no error'}; group lrs {lrs} "
        f"(expected {expected_lrs}: own lr, else the default)",
        errata,
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
    untouched = {}
    for form, params in (
        ("filter(requires_grad)", filter(lambda p: p.requires_grad, net.parameters())),
        ("all parameters", net.parameters()),
    ):
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-2)
        train(opt)
        untouched[form] = all(
            p.grad is None and torch.equal(p.detach(), frozen[n])
            for n, p in net.named_parameters()
            if n in frozen
        )
    head_before = head.weight.detach().clone()
    # Unfreeze: the notes' add_param_group for a layer that was not in the filtered optimizer.
    opt = torch.optim.SGD(filter(lambda p: p.requires_grad, net.parameters()), lr=0.1)
    for p in net[3].parameters():
        p.requires_grad_(True)
    opt.add_param_group({"params": net[3].parameters()})
    conv_before = net[3].weight.detach().clone()
    train(opt, 1)
    unfrozen_moves = not torch.equal(net[3].weight.detach(), conv_before) and not torch.equal(
        head.weight.detach(), head_before
    )
    # Beyond the notes: a param frozen *after* it had a gradient keeps a stale .grad unless
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
    return judge_freezing(untouched, len(frozen), unfrozen_moves, drift)


def judge_freezing(
    untouched: dict[str, bool], n_frozen: int, unfrozen_moves: bool, late_drift: float
) -> Finding:
    """The notes freeze with requires_grad=False before training: .grad stays None and step()
    leaves those parameters bit-identical, whether or not they were given to the optimizer; after
    unfreezing, add_param_group trains them. Freezing a parameter that already trained, with
    zero_grad(set_to_none=False), is a scenario the notes never show: reported, deciding nothing."""
    moved = [form for form, ok in untouched.items() if not ok]
    ok = not moved and unfrozen_moves
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        f"{n_frozen} params frozen before training (grad None) "
        + (f"MOVED or got a grad with {moved}" if moved else "are bit-identical")
        + f" after 3 SGD(momentum, weight_decay) steps ({', '.join(untouched)}); unfrozen and added "
        "with add_param_group they "
        + ("train" if unfrozen_moves else "do NOT train")
        + f"; beyond the notes: a param frozen after training, with zero_grad(set_to_none=False), "
        f"still moves by {late_drift:.3g} (momentum buffer + decay): 'grad is None' is what protects it",
    )


# 001's two apply() snippets: `class Model(nn.Module):` ... `model.apply(init_weight)`, and
# `# given a function, and applies it to all submodules` ... `net.appply(init_weights)`.
NOTES_APPLY, NOTES_APPLY_SECOND = "001#18", "001#19"


def _raised(code: str, scope: dict) -> str | None:
    """Run the notes' code; None when it runs, else the error's type and first line."""
    try:
        exec(code, scope)  # noqa: S102 - the notes' own text
        return None
    except Exception as e:  # whatever it raises is the observation
        return f"{type(e).__name__}: {str(e).splitlines()[0][:90]}"


def check_apply_init(device):
    # 001's first apply() snippet, top to bottom as pasted: Model, init_weight, model.apply.
    first = parse.snippet_text(NOTES_APPLY)
    scope = {"nn": nn, "torch": torch}
    as_written = _raised(first, scope)
    # Its second one, with the misspelt `net.appply` read as `net.apply` (an erratum of the notes'
    # snippets check): the same fill_ outside no_grad.
    second = parse.snippet_text(NOTES_APPLY_SECOND, last="net.appply(")
    second_raised = _raised(second.replace("net.appply(", "net.apply("), {"nn": nn, "torch": torch})
    # The same init function run inside torch.no_grad(), the form the apply() docs use.
    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).to(device)
    with torch.no_grad():
        net.apply(scope["init_weight"])
    ones = all(torch.equal(m.weight, torch.ones(2, 2, device=device)) for m in net)
    visited = []
    net.apply(lambda m: visited.append(type(m).__name__))
    # 004's torch.fill(size, value, dtype, device) is torch.full's signature.
    try:
        torch.fill((2, 3), 1.0)
        fill_error = None
    except TypeError as e:
        fill_error = f"TypeError ({str(e).splitlines()[0].split(', but expected')[0]})"
    # 001's first init function reaches `tirch` on a Conv2d (run inside no_grad, so fill_ is not
    # what stops it).
    try:
        with torch.no_grad():
            nn.Sequential(nn.Conv2d(1, 1, 1)).apply(scope["init_weight"])
        tirch_error = None
    except NameError as e:
        tirch_error = str(e)
    return judge_apply_init(
        as_written,
        second_raised,
        ones,
        visited == ["Linear", "Linear", "Sequential"],
        fill_error,
        tirch_error,
    )


def judge_apply_init(
    as_written: str | None,
    second_raised: str | None,
    no_grad_init_ok: bool,
    children_first: bool,
    fill_error: str | None,
    tirch_error: str | None = None,
) -> Finding:
    """The notes' recipe: model.apply(init_weight) initialises every submodule with their init
    functions, which fill_ a parameter outside torch.no_grad(). Fails where the notes' snippets
    raise as written (or where apply() does not initialise every Linear, children first, even
    inside no_grad); holds only where they run and initialise. torch.fill for torch.full and
    tirch for torch are misspelt names: typos. (`net.appply` is the notes' snippets check's.)"""
    errata = []
    if fill_error:
        errata.append(
            Erratum(
                ErratumKind.TYPO,
                "torch.fill(size:tuple,value,dtype,device)",
                f"torch.fill((2,3), 1.0) raises {fill_error}: that signature is torch.full's",
            )
        )
    if tirch_error:
        errata.append(
            Erratum(
                ErratumKind.TYPO,
                "tirch.nn.init.xavier_uniform_(m.weight)",
                f"NameError on a Conv2d ({tirch_error}): torch.nn.init is meant",
            )
        )
    raised = [r for r in (as_written, second_raised) if r]
    ok = not raised and no_grad_init_ok and children_first
    inside = (
        "inside torch.no_grad() the same function sets every Linear's weight to 1, children visited "
        "before the parent: use that (or @torch.no_grad() on the init function)"
        if no_grad_init_ok and children_first
        else "even inside torch.no_grad() apply() does NOT set every Linear's weight to 1 children first"
    )
    return Finding(
        Verdict.HOLDS if ok else Verdict.FAILS,
        (
            f"the notes' model.apply(init_weight) raises {as_written}"
            if as_written
            else "the notes' model.apply(init_weight) runs"
        )
        + (
            f"; their init_weights (net.appply read as net.apply) raises {second_raised}"
            if second_raised
            else "; their init_weights runs"
        )
        + f" (m.weight.fill_ on a parameter outside torch.no_grad()); {inside}",
        tuple(errata),
    )


CASE = Case(
    id="optim.param_groups",
    tier=3,
    claim="param_groups/add_param_group hold per-group hyper-parameters; frozen params (grad None) are not "
    "updated by step(); YOLOv5 puts biases and BN weights in groups without weight decay; apply() "
    "initialises every submodule.",
    source="001 torch.optim / 迁移学习 / apply(), 003 yolov5 摘录, 004 torch.fill",
    claims=(
        Claim(
            "add_param_group",
            "每个 `optimizer` 中有一个 `param_groups` 维护一组参数更新，其中包含了诸如学习率之类的超参数"
            " … `add_param_group` 用于添加新的参数"
            " … raise TypeError('optimizer parameters need to be organized in ordered collections, but '"
            ' … raise ValueError("some parameters appear in more than one parameter group")'
            " … param_group.setdefault(name, default)",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="each param group carries its own hyper-parameters; add_param_group appends a group, "
            "raises TypeError for a set of parameters and ValueError for a parameter already in a "
            "group, and fills what the group leaves out from the optimizer's defaults (the notes' "
            "excerpt of torch's source, checked against the installed torch's behaviour)",
        ),
        Claim(
            "freezing",
            "这里也可以添加全部参数，因为 requires_grad 设置为 False 后，对应的 `.grad` 为 None， "
            "`step()` 不会更新这些参数。"
            " … optimizer.add_param_group({'params': net.fc2.parameters()})",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="parameters frozen (requires_grad=False) before training keep grad None and step() "
            "leaves them unchanged, whether the optimizer got only the trainable ones or all; "
            "unfrozen and added with add_param_group they train",
        ),
        Claim(
            "yolov5_grouping",
            "g0, g1, g2 = [], [], []  # optimizer parameter groups"
            " … optimizer.add_param_group({'params': g1, 'weight_decay': hyp['weight_decay']})"
            " … optimizer.add_param_group({'params': g2})",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="the YOLOv5 loop puts every parameter in exactly one group, weight decay only on "
            "conv/linear weights (g1), none on BN weights (g0) and biases (g2) (the SGD branch)",
        ),
        Claim(
            "apply_init",
            "给模型中每一部分初始化参数会用到 … model.apply(init_weight)"
            " … # given a function, and applies it to all submodules",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="the notes' snippets initialise every submodule with apply(init_fn) as written: "
            "their init functions fill_ a parameter with no torch.no_grad()",
        ),
    ),
    checks={
        "yolov5_grouping": Check(check_yolov5_grouping, claim="yolov5_grouping"),
        "add_param_group_errors": Check(check_add_param_group_errors, claim="add_param_group"),
        "freezing": Check(check_freezing, claim="freezing"),
        "apply_init": Check(check_apply_init, claim="apply_init"),
    },
)
