"""Shape operations as the notes state them (002 补充, 003, 004 items 10, 18 and 31): `unsqueeze`,
`cat` vs `stack`, `bmm`, advanced indexing with `None`, `nn.Flatten` vs `torch.flatten`, `np.pad`
beside `F.pad`, and the minibatch dimension of `nn` modules.

Each check observes, then a pure `judge_*` decides: the verdict on what the notes teach, their
slips as errata beside it."""

from __future__ import annotations

import inspect
import itertools
import random

import numpy as np
import torch
import torch.nn.functional as F

from cases.spec import UNIT_ROUNDOFF, Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict


def _randn(shape, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(device)


def check_unsqueeze(device):
    x = _randn((2, 3), device)
    shapes = (tuple(x.unsqueeze(0).shape), tuple(x.unsqueeze(1).shape), tuple(x.unsqueeze(-1).shape))
    return judge_unsqueeze(shapes, x.unsqueeze(0).data_ptr() == x.data_ptr())


def judge_unsqueeze(shapes: tuple, is_view: bool) -> Finding:
    """002: X.shape = (2,3), X.unsqueeze(0).shape = (1,2,3), X.unsqueeze(1).shape = (2,1,3)."""
    stated = shapes[:2] == ((1, 2, 3), (2, 1, 3))
    return Finding(
        Verdict.HOLDS if stated else Verdict.FAILS,
        f"(2,3).unsqueeze(0) → {shapes[0]}, unsqueeze(1) → {shapes[1]}, unsqueeze(-1) → {shapes[2]}"
        + (", as stated" if stated else ", NOT as stated")
        + ("; a view" if is_view else "; a copy"),
    )


def check_cat_stack(device):
    xs = [_randn((2, 3), device, seed) for seed in range(4)]
    stacked = []
    for dim in range(3):  # "dim between 0 and the number of dims of the tensors (inclusive)"
        s = torch.stack(xs, dim)
        stacked.append((tuple(s.shape), torch.equal(s, torch.cat([x.unsqueeze(dim) for x in xs], dim))))
    try:
        torch.stack(xs, 3)
        out_of_range = ""
    except IndexError as exc:
        out_of_range = type(exc).__name__
    cat_shapes = (tuple(torch.cat(xs, 0).shape), tuple(torch.cat(xs, 1).shape))
    return judge_cat_stack(stacked, out_of_range, cat_shapes)


def judge_cat_stack(stacked: list, out_of_range: str, cat_shapes: tuple) -> Finding:
    """004 item 31: stack adds a new dim (at any dim in [0, ndim]; it is cat of the unsqueezed
    tensors), cat joins along an existing one."""
    new_dim = all(shape[d] == 4 and len(shape) == 3 and same for d, (shape, same) in enumerate(stacked))
    holds = new_dim and cat_shapes == ((8, 3), (2, 12))
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"stack of four (2,3) at dims 0..2 → {[s for s, _ in stacked]}"
        + (
            " (= cat of unsqueezed tensors)"
            if all(same for _, same in stacked)
            else " (NOT cat of unsqueezed)"
        )
        + f", dim=3 {'raises ' + out_of_range if out_of_range else 'does not raise'}; "
        f"cat grows an existing dim: {cat_shapes[0]} / {cat_shapes[1]}",
    )


def check_bmm(device):
    x, y = _randn((5, 2, 3), device, 1), _randn((5, 3, 4), device, 2)
    out = torch.bmm(x, y)
    truth = torch.stack([x[i].double() @ y[i].double() for i in range(5)])
    # Higham: an fp32 dot product of 3 terms is within γ₃·Σ|x||y| ≈ 3u·Σ|x||y| of the truth, elementwise.
    bound = 3 * UNIT_ROUNDOFF[torch.float32] * (x.double().abs() @ y.double().abs())
    err = ((out.double() - truth).abs() / bound).max().item()
    try:
        torch.bmm(x[:1], y)
        batch_broadcasts = True
    except RuntimeError:
        batch_broadcasts = False
    return judge_bmm(tuple(out.shape), err, batch_broadcasts, tuple(torch.matmul(x[:1], y).shape))


def judge_bmm(shape: tuple, err: float, batch_broadcasts: bool, matmul_shape: tuple) -> Finding:
    """002: torch.bmm(X, Y) with X (n,a,b), Y (n,b,c) gives (n,a,c): one matmul per batch entry.
    `err`: the largest error against per-batch float64 matmuls in units of its fp32 dot-product
    bound; a wrong pairing is O(1) off, thousands of bounds. That bmm does not broadcast is context."""
    holds = shape == (5, 2, 4) and err <= 1
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"bmm (5,2,3)·(5,3,4) → {shape}, max error {err:.2g} of the fp32 bound γ₃·Σ|x||y| vs per-batch "
        "float64 matmul; "
        + (
            "unlike matmul it does not broadcast the batch dim ((1,2,3)·(5,3,4) raises, matmul gives "
            f"{matmul_shape})"
            if not batch_broadcasts
            else "bmm broadcast the batch dim"
        ),
    )


def check_index_none(device):
    """003: `y = x[[0, 2], None]  # 相当于 y = x[[0, 2]].view(-1, 1)` for x = tensor([1, 2, 3])."""
    x = torch.tensor([1, 2, 3], device=device)
    y = x[[0, 2], None]
    same = y.shape == (2, 1) and torch.equal(y, x[[0, 2]].view(-1, 1))
    m = _randn((3, 4), device)
    return judge_index_none(
        same, y.data_ptr() != x.data_ptr(), tuple(m[[0, 2], None].shape), tuple(m[[0, 2]].view(-1, 1).shape)
    )


def judge_index_none(same_1d: bool, copies: bool, index_2d: tuple, view_2d: tuple) -> Finding:
    """The notes' equivalence on their 1-D x; for a 2-D tensor (a case the notes do not show) the
    two differ, reported as context."""
    return Finding(
        Verdict.HOLDS if same_1d else Verdict.FAILS,
        f"for the notes' 1-D x, x[[0,2], None] {'equals' if same_1d else 'does NOT equal'} "
        f"x[[0,2]].view(-1,1) ({'a copy' if copies else 'a view'}); for a 2-D x the two give "
        f"{index_2d} vs {view_2d}: None inserts a dim, view flattens",
    )


def check_flatten(device):
    x = _randn((2, 3, 4, 5), device)
    params = inspect.signature(torch.nn.Flatten).parameters
    try:
        compile("nn.Flatten(dim=1,dim=-1)", "<notes>", "eval")
        spelling_error = ""
    except SyntaxError as exc:
        spelling_error = f"SyntaxError ({exc.msg})"
    return judge_flatten(
        tuple(torch.nn.Flatten()(x).shape),
        tuple(torch.flatten(x).shape),
        (params["start_dim"].default, params["end_dim"].default),
        spelling_error,
    )


def judge_flatten(
    module_shape: tuple, function_shape: tuple, defaults: tuple, spelling_error: str
) -> Finding:
    """004 item 18: nn.Flatten keeps dim 0 (start_dim=1), torch.flatten flattens all
    (start_dim=0). The notes' spelling `nn.Flatten(dim=1,dim=-1)` repeats a keyword that does not
    exist: a typo."""
    holds = module_shape == (2, 60) and function_shape == (120,) and defaults == (1, -1)
    errata = ()
    if spelling_error:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "nn.Flatten(dim=1,dim=-1)",
                f"{spelling_error}; the parameters are start_dim={defaults[0]}, end_dim={defaults[1]}",
            ),
        )
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"nn.Flatten() (start_dim, end_dim defaults {defaults}) maps (2,3,4,5) → {module_shape}, "
        f"torch.flatten → {function_shape}" + (", as stated" if holds else ", NOT as stated"),
        errata,
    )


# ---- 004 item 10: np.pad beside F.pad --------------------------------------------------------------


def _pad_by_hand(x: np.ndarray, widths) -> np.ndarray:
    """Zero padding element by element: widths[d] = (before, after) of axis d, from the first."""
    out = np.zeros([n + b + a for n, (b, a) in zip(x.shape, widths)], dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        out[tuple(i + b for i, (b, _) in zip(idx, widths))] = x[idx]
    return out


def _torch_pad_arg(widths) -> tuple:
    """F.pad's `pad`: (before, after) pairs from the LAST dim backwards, per its documentation."""
    return tuple(w for pair in reversed(widths) for w in pair)


def pad_one_hot_sequence(sequence: np.ndarray, target_length: int) -> np.ndarray:
    """The notes' function (004 item 10), as written."""
    sequence_length = sequence.shape[0]
    pad_length = target_length - sequence_length
    if pad_length < 0:
        raise ValueError(
            "Cannot set a negative amount of padding. Sequence length was {}, target_length was {}.".format(
                sequence_length, target_length
            )
        )
    pad_values = [[0, pad_length], [0, 0]]
    return np.pad(sequence, pad_values, mode="constant")


def check_pad(device):
    rng = random.Random(0)
    shapes = [(3,), (2, 3), (3, 1, 2), (2, 3, 4)]
    trials = {"np": 0, "np_ok": 0, "F": 0, "F_ok": 0, "axis_order_differs": 0}
    for shape, _ in itertools.product(shapes, range(6)):
        widths = [(rng.randint(0, 2), rng.randint(0, 2)) for _ in shape]
        x = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
        truth = _pad_by_hand(x, widths)
        trials["np"] += 1
        trials["np_ok"] += np.array_equal(np.pad(x, widths, mode="constant"), truth)
        t = torch.from_numpy(x).to(device)
        trials["F"] += 1
        trials["F_ok"] += np.array_equal(F.pad(t, _torch_pad_arg(widths)).cpu().numpy(), truth)
        # The np.pad pairs passed to F.pad in axis order, as one would read them off np.pad's call.
        in_axis_order = F.pad(t, tuple(w for pair in widths for w in pair)).cpu().numpy()
        trials["axis_order_differs"] += in_axis_order.shape != truth.shape or not np.array_equal(
            in_axis_order, truth
        )
    one_hot = np.eye(20, dtype=np.float32)[[0, 4, 7]]  # a (seq_len=3, 20) one-hot protein
    padded = pad_one_hot_sequence(one_hot, 5)
    pads_seq_dim = padded.shape == (5, 20) and np.array_equal(padded, _pad_by_hand(one_hot, [(0, 2), (0, 0)]))
    try:
        pad_one_hot_sequence(one_hot, 2)
        refuses_negative = False
    except ValueError:
        refuses_negative = True
    naive = tuple(F.pad(torch.from_numpy(one_hot), (0, 2)).shape)
    return judge_pad(trials, pads_seq_dim and refuses_negative, naive)


def judge_pad(trials: dict, notes_function_right: bool, naive_shape: tuple) -> Finding:
    """The technique: np.pad takes one (before, after) per axis from the first (as the notes
    describe pad_width), F.pad takes (before, after) pairs from the last dim backwards, each equal
    to zero padding done by hand; the notes' pad_one_hot_sequence pads the seq_len dim. The notes
    describe only np.pad's argument, so the two orders differing is context, not an erratum."""
    holds = (
        trials["np"] > 0
        and trials["np_ok"] == trials["np"]
        and trials["F_ok"] == trials["F"]
        and notes_function_right
    )
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"np.pad with per-axis (before, after) from the first axis equals padding by hand in "
        f"{trials['np_ok']}/{trials['np']} random cases, F.pad with pairs from the last dim backwards in "
        f"{trials['F_ok']}/{trials['F']}; the same pairs given to F.pad in axis order pad the wrong dims in "
        f"{trials['axis_order_differs']}/{trials['F']}. The notes' pad_one_hot_sequence "
        + (
            "pads (3,20) to (5,20) along seq_len and refuses a negative pad"
            if notes_function_right
            else "FAILS"
        )
        + f"; F.pad(x, (0, 2)) on the (3,20) one-hot gives {naive_shape}: its pairs start at the last dim",
    )


# ---- 004 item 18: is every nn module batched? -----------------------------------------------------


def check_unbatched_inputs(device):
    g = torch.Generator().manual_seed(5)
    torch_state = torch.random.get_rng_state()
    torch.manual_seed(5)
    conv = torch.nn.Conv2d(3, 4, 3).to(device).double()
    linear = torch.nn.Linear(6, 2).to(device).double()
    torch.random.set_rng_state(torch_state)
    images = torch.randn(5, 3, 7, 7, generator=g, dtype=torch.float64).to(device)
    rows = torch.randn(5, 6, generator=g, dtype=torch.float64).to(device)
    # The batch convention: the first dim is the minibatch, each entry computed on its own. float64
    # sums of ≤ 28 terms in another order: ≤ 2·28u₆₄·Σ|terms|, 3e-14 at Σ|terms| ≈ 5; 1e-12 covers it
    # and is 10¹¹ below another sample's O(1) output.
    batched_ok = torch.allclose(
        conv(images), torch.cat([conv(images[i : i + 1]) for i in range(5)]), rtol=1e-12, atol=1e-12
    ) and torch.allclose(
        linear(rows), torch.cat([linear(rows[i : i + 1]) for i in range(5)]), rtol=1e-12, atol=1e-12
    )
    unbatched = {}
    for name, module, sample in (("Conv2d", conv, images[0]), ("Linear", linear, rows[0])):
        try:
            out = module(sample)
        except RuntimeError as exc:
            unbatched[name] = (tuple(sample.shape), None, str(exc).split("\n")[0])
            continue
        same = torch.allclose(out, module(sample.unsqueeze(0))[0], rtol=1e-12, atol=1e-12)  # as above
        unbatched[name] = (
            tuple(sample.shape),
            tuple(out.shape),
            "equals the batch of one" if same else "differs",
        )
    return judge_unbatched_inputs(batched_ok, unbatched)


def judge_unbatched_inputs(batched_ok: bool, unbatched: dict) -> Finding:
    """The notes: "nn.Module的所有模块都是带有minibatch的 … 你传递进去的数据全部都应该是(minibatch,dim1...)":
    every module takes its input with the minibatch as the first dim. Fails where Conv2d or Linear
    take an input without one (and compute the sample's result); the batch-first convention itself
    (each entry computed on its own) is reported beside it."""
    accepted = {name: row for name, row in unbatched.items() if row[1] is not None}
    holds = batched_ok and not accepted
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        "unbatched: "
        + "; ".join(
            f"{name} {shape} → {out if out is not None else how}" + (f" ({how})" if out is not None else "")
            for name, (shape, out, how) in unbatched.items()
        )
        + (
            f": {' and '.join(accepted)} take an input without a minibatch dim, so not every module's input "
            "is (minibatch, …)"
            if accepted
            else ": each needs the minibatch dim"
        )
        + "; batched, Conv2d on (5,3,7,7) and Linear on (5,6) "
        + (
            "equal their per-sample outputs stacked (float64): the batch-first convention works"
            if batched_ok
            else "do NOT equal their per-sample outputs"
        ),
    )


CASE = Case(
    id="shape.ops",
    tier=3,
    claim="unsqueeze inserts a size-1 dim; stack adds a dim, cat extends one; bmm (n,a,b)(n,b,c)→(n,a,c); "
    "x[[0,2], None] == x[[0,2]].view(-1,1); nn.Flatten starts at dim 1, torch.flatten at 0; np.pad takes "
    "(before, after) per axis; modules take (minibatch, …) inputs.",
    source="002 补充; 003; 004 items 10, 18, 31",
    claims=(
        Claim(
            "unsqueeze",
            "X.shape = (2,3) X.unsqueeze(0).shape = (1，2，3) X.unsqueeze(1).shape = (2,1,3)",
            "002",
            ClaimKind.BEHAVIOUR,
        ),
        Claim("cat_stack", "stack是新增加一个维度，cat是在原有维度上拼接", "004", ClaimKind.BEHAVIOUR),
        Claim(
            "bmm",
            "批量矩阵乘法 torch.bmm(X,Y),X的shape为(n,a,b)，Y的shape为(n,b,c)，输出形状(n,a,c)",
            "002",
            ClaimKind.CORRECTNESS,
        ),
        Claim(
            "index_none", "y = x[[0, 2], None]  # 相当于y=x[[0, 2]].view(-1, 1)", "003", ClaimKind.BEHAVIOUR
        ),
        Claim(
            "flatten",
            "nn.Flatten()从神经网络的角度来理解，默认第0个维度是minibatch,所以start_dim=1;"
            "torch.flatten()只考虑当前的张量，start_dim=0",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "pad",
            "pad_width：**每个轴**要填充的数据的数目【每个维度前、后各要填充多少个数据】 … "
            "Pads one hot sequence [seq_len, num_aas] in the seq_len dimension.",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="np.pad's pad_width gives one (before, after) per axis, from the first axis; the notes' "
            "pad_one_hot_sequence pads a (seq_len, 20) one-hot along seq_len and refuses a negative pad. "
            "F.pad, named beside np.pad, takes its pairs from the last dim backwards: reported, the notes "
            "describe only pad_width",
        ),
        Claim(
            "minibatch_first",
            "nn.Module的所有模块都是带有minibatch的,只不过nn.Linear,nn.Conv2d不用写而已，"
            "你传递进去的数据全部都应该是(minibatch,dim1...)，即保证第一个维度是minibatch的维度",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="every nn module takes its input with a minibatch as the first dim (Linear and Conv2d "
            "included): an input without one is not what they take",
        ),
    ),
    checks={
        "unsqueeze": Check(check_unsqueeze, claim="unsqueeze"),
        "cat_stack": Check(check_cat_stack, claim="cat_stack"),
        "bmm": Check(check_bmm, claim="bmm"),
        "index_none": Check(check_index_none, claim="index_none"),
        "flatten": Check(check_flatten, claim="flatten"),
        "pad": Check(check_pad, claim="pad"),
        "unbatched_inputs": Check(check_unbatched_inputs, claim="minibatch_first"),
    },
)
