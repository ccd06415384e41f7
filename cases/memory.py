"""Activation checkpointing: recompute instead of store (notes 004, 内存分配 / check pointing).

The notes quote the docs: a checkpointed function runs its forward without saving intermediate
activations, keeps only its inputs, and recomputes the rest during backward; `preserve_rng_state`
makes the recomputation draw the same dropout masks. Trading compute for memory: a stack of n
blocks cut into k segments keeps the k-1 segment inputs plus, at any time, one segment's
activations, so memory ≈ (k-1)·b + (n/k)·a (b: a boundary tensor, a: one block's saved
activations), minimal at k* = √(n·a/b): the √n rule when a ≈ b (Chen et al. 2016, 48 GB → 7 GB at
~30% extra time). `checkpoint_sequential` runs its *last* segment without checkpointing, so its
forward keeps (k-1)·b + (n/k)·a as well. A block whose only saved tensor is its input (h + W·h:
Linear saves h, the add saves nothing) gains nothing: its boundary *is* its activation.

Dropout here draws its mask from fp32 uniforms (not `F.dropout`), so the float64 oracle sees the
very same masks on every device; it uses the global RNG exactly as `nn.Dropout` does, which is
what `preserve_rng_state` has to reproduce.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from cases._lib.init import perturb_norms
from cases._lib.inputs import generator
from cases._lib.timing import median_time
from cases.spec import (
    UNIT_ROUNDOFF,
    Case,
    Check,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    Tol,
    Verdict,
    naive,
    optimized,
)
from harness import measure
from harness.contract.rules import AllOf, FromFindings, Lighter
from notes import parse

FP32 = torch.float32
P_DROP = 0.1


class Dropout(nn.Module):
    def forward(self, h):
        keep = torch.rand(h.shape, device=h.device, dtype=torch.float32) >= P_DROP
        return h * keep.to(h.dtype) / (1 - P_DROP)


class MLPBlock(nn.Module):
    """h + fc2(drop(gelu(fc1(h)))): saves h, fc1's output, gelu's output, the mask and drop's
    output, ≈ 4 boundary-sized tensors (a ≈ 4b with fc1 of the same width)."""

    def __init__(self, w):
        super().__init__()
        self.fc1, self.fc2, self.drop = nn.Linear(w, w), nn.Linear(w, w), Dropout()

    def forward(self, h):
        return h + self.fc2(self.drop(F.gelu(self.fc1(h))))


class TransformerBlock(nn.Module):
    """Pre-LN attention + MLP (4× wide) with dropout: a ≈ 20b, so k* = √(20n)."""

    def __init__(self, w):
        super().__init__()
        self.heads = max(w // 32, 1)
        self.ln1, self.ln2 = nn.LayerNorm(w), nn.LayerNorm(w)
        self.qkv, self.proj = nn.Linear(w, 3 * w), nn.Linear(w, w)
        self.fc1, self.fc2 = nn.Linear(w, 4 * w), nn.Linear(4 * w, w)
        self.drop1, self.drop2 = Dropout(), Dropout()

    def forward(self, h):
        b, t, w = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        # The math path of attention, written out: identical in fp32 and float64 on every device.
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(w // self.heads), dim=-1)
        h = h + self.drop1(self.proj((att @ v).transpose(1, 2).reshape(b, t, w)))
        return h + self.drop2(self.fc2(F.gelu(self.fc1(self.ln2(h)))))


class LinearBlock(nn.Module):
    """h + W·h: Linear saves only h, the block's own input. Nothing for checkpointing to drop."""

    def __init__(self, w):
        super().__init__()
        self.fc = nn.Linear(w, w)

    def forward(self, h):
        return h + self.fc(h)


@dataclass(frozen=True, eq=False)
class Net:
    blocks: nn.Sequential
    seed: int  # the dropout RNG seed every run starts from


def _make(block, data_shape, size, dtype, device, seed):
    torch.manual_seed(seed)  # nn.Module init draws from the global RNG (of `device`)
    with torch.device(device):  # a full-size model initialised on the CPU costs seconds
        blocks = perturb_norms(nn.Sequential(*[block(size["width"]) for _ in range(size["depth"])]))
    blocks = blocks.to(dtype=dtype)
    g = generator(device, seed + 1)
    x = torch.randn(data_shape, generator=g, device=device).to(dtype)
    r = (torch.randn(data_shape, generator=g, device=device) / math.sqrt(x.numel())).to(dtype)
    return (x, r, *blocks.parameters(), Net(blocks, seed + 2))


def make_mlp(size, dtype, device, seed):
    return _make(MLPBlock, (size["batch"], size["width"]), size, dtype, device, seed)


def make_transformer(size, dtype, device, seed):
    return _make(
        TransformerBlock, (max(size["batch"] // 16, 1), 16, size["width"]), size, dtype, device, seed
    )


def make_linear(size, dtype, device, seed):
    return _make(LinearBlock, (size["batch"], size["width"]), size, dtype, device, seed)


# ---- the variants: forward + backward, returning the gradients ------------------------------------


def _rng(device):
    return torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])


def _grads(forward, x, r, params, net):
    """Gradients of a fixed random projection of the output w.r.t. the input and every parameter.
    The dropout RNG is reseeded (in a fork, leaving the global state alone) so every run draws
    the same masks."""
    x = x.detach().requires_grad_(True)
    with _rng(x.device):
        torch.manual_seed(net.seed)
        loss = (forward(net.blocks, x) * r).sum()
        return torch.autograd.grad(loss, (x, *params))


def plain_forward(blocks, x):
    return blocks(x)


def per_block_forward(blocks, x, preserve_rng_state=True):
    # Saves one boundary per block (n·b); each block's internals are recomputed in backward:
    # one extra forward of every block (~+1/3 of fwd+bwd flops).
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=preserve_rng_state)
    return x


def segments_for(depth: int) -> int:
    return max(round(math.sqrt(depth)), 1)


def sqrt_segments_forward(blocks, x, segments=None):
    k = segments or segments_for(len(blocks))
    return checkpoint_sequential(blocks, k, x, use_reentrant=False)


def _variant(forward):
    def run(x, r, *params_and_net):
        *params, net = params_and_net
        return _grads(forward, x, r, params, net)

    run.__name__ = forward.__name__.removesuffix("_forward")
    return run


def grads_float64(x, r, *params_and_net):
    """The truth: plain backward of a float64 copy, with the same dropout masks."""
    *_, net = params_and_net
    net64 = Net(copy.deepcopy(net.blocks).double(), net.seed)
    return _grads(plain_forward, x.double(), r.double(), tuple(net64.blocks.parameters()), net64)


_FORWARDS = {"plain": plain_forward, "per_block": per_block_forward, "sqrt_segments": sqrt_segments_forward}


def saved_activation_metrics(variant_name, inputs, device):
    """Bytes autograd keeps for backward after the forward, parameters and inputs left out,
    in units of one boundary tensor too, so runs of different widths read alike."""
    x, r, *params, net = inputs
    forward = _FORWARDS[variant_name.split(".", 1)[1]]
    xg = x.detach().requires_grad_(True)
    with _rng(x.device):
        torch.manual_seed(net.seed)
        _, saved = measure.saved_tensor_bytes(lambda: forward(net.blocks, xg), exclude=(x, r, *params))
    depth = len(net.blocks)
    segments = {"plain": 1, "per_block": depth, "sqrt_segments": segments_for(depth)}[
        variant_name.split(".", 1)[1]
    ]
    return {
        "saved_bytes": saved,
        "saved_boundaries": saved / (x.numel() * x.element_size()),
        "segments": segments,
        "depth": depth,
    }


# ---- checks -------------------------------------------------------------------------------------


def check_rng_preserved(device):
    """With dropout inside, checkpointed gradients equal plain backward's only because the
    recomputation replays the RNG; without preserve_rng_state the masks differ."""
    size = {"depth": 4, "width": 64, "batch": 16}
    x, r, *params, net = make_mlp(size, FP32, device, seed=5)
    plain = _grads(plain_forward, x, r, params, net)
    kept = _grads(per_block_forward, x, r, params, net)
    lost = _grads(lambda b, h: per_block_forward(b, h, preserve_rng_state=False), x, r, params, net)

    def rel(a, b):
        return max(((p - q).abs().max() / q.abs().max()).item() for p, q in zip(a, b))

    same, differ = rel(kept, plain), rel(lost, plain)
    # The replay runs the same kernels on the same masks: bit-equal expected. Were a kernel to sum in
    # another order, each side is within the chain's bound of float64 (MLP_TOL: floor + rtol, 35u
    # here): twice it. Other masks change the gradients by O(1): differ > 1e-2 is 10⁴ bounds out.
    tol = MLP_TOL[FP32](size)
    return judge_rng_preserved(same, differ, 2 * (tol.floor + tol.rtol))


def judge_rng_preserved(same: float, differ: float, bound: float) -> Finding:
    """preserve_rng_state=True: the checkpointed gradients (dropout inside) equal plain backward's
    within `bound` (bit-equal expected: the replay runs the same kernels on the same masks; the
    bound is twice the chain's, for a kernel that sums in another order). False: other masks, an
    O(1) change (> 1e-2, 10⁴ bounds out), or the flag did nothing observable."""
    kept, redrawn = same <= bound, differ > 1e-2
    return Finding(
        Verdict.HOLDS if kept and redrawn else Verdict.FAILS,
        f"per-block checkpoint with dropout: grads {'equal' if kept else 'DIFFER FROM'} plain backward "
        f"({same:.2g} rel, bound {bound:.2g}) with preserve_rng_state=True; {differ:.2g} off with False"
        + ("" if redrawn else " (the masks were NOT redrawn without it: the flag is not what kept them)"),
    )


def check_segments_sweep(device):
    """Saved bytes and time vs the number of segments k = 1..n for the deep MLP: U-shaped,
    minimal near k* = √(n·a/b), never below the model's floor."""
    size = {"depth": 16, "width": 64, "batch": 32}
    x, r, *params, net = make_mlp(size, FP32, device, seed=1)
    n, boundary = size["depth"], x.numel() * x.element_size()
    excluded = (x, r, *params)

    def saved(forward):
        xg = x.detach().requires_grad_(True)
        with _rng(x.device):
            torch.manual_seed(net.seed)
            return measure.saved_tensor_bytes(lambda: forward(net.blocks, xg), exclude=excluded)[1]

    def timed(forward):
        return median_time(lambda: _grads(forward, x, r, params, net), device)

    plain_saved, plain_time = saved(plain_forward), timed(plain_forward)
    sweep = {k: saved(lambda b, h, k=k: sqrt_segments_forward(b, h, k)) for k in range(1, n + 1)}
    best = min(sweep, key=sweep.get)
    a = plain_saved / n / boundary  # one block's saved activations, in boundaries
    predicted = math.sqrt(n * a)
    best_time = timed(lambda b, h: sqrt_segments_forward(b, h, best))

    overhead = best_time / plain_time - 1
    return judge_segments_sweep(sweep, plain_saved, boundary, n, predicted, a, overhead, device.type)


def judge_segments_sweep(
    sweep: dict,
    plain_saved: int,
    boundary: int,
    n: int,
    predicted: float,
    a: float,
    overhead: float,
    where: str,
) -> Finding:
    """The catalogue's model, context (the notes give no √n rule): saved bytes vs k segments equal
    plain's at k = 1, fall below half of it at the best k, are U-shaped (the best below both ends)
    and minimal within 2× of k* = √(n·a/b)."""
    best = min(sweep, key=sweep.get)
    problems = [
        what
        for what, ok in (
            (f"1 segment saved {sweep.get(1)} B, plain {plain_saved} B", sweep.get(1) == plain_saved),
            (f"best k={best} not below half of plain", sweep[best] < plain_saved / 2),
            ("not U-shaped", sweep[best] < sweep[n] and sweep[best] < sweep.get(1, 0)),
            (f"optimum k={best} far from √(n·a/b) = {predicted:.1f}", predicted / 2 <= best <= predicted * 2),
        )
        if not ok
    ]
    curve = ", ".join(f"{k}:{sweep[k] / boundary:.0f}" for k in sweep)
    return Finding(
        Verdict.FAILS if problems else Verdict.HOLDS,
        (f"NOT as modelled: {'; '.join(problems)}. " if problems else "")
        + f"MLP n={n}: saved bytes in boundaries (k:saved) {curve}; plain {plain_saved / boundary:.0f}. "
        f"Optimum k={best} (model √(n·a/b)={predicted:.1f}, a={a:.1f}b; plain √n={math.sqrt(n):.0f}): "
        f"{plain_saved / sweep[best]:.1f}× less saved; time {overhead:+.0%} vs plain ({where}, median "
        "of 3). The curve is jagged where k does not divide n: checkpoint_sequential puts n//k blocks in "
        f"each segment and the remainder in the last, unchecked one (k={n // 2 + 1}: "
        f"{n - (n // 2 + 1 - 1) * (n // (n // 2 + 1))} blocks kept whole)",
    )


def check_no_saving_block(device):
    """h + W·h blocks: checkpointing each one keeps exactly what plain autograd keeps (h), and
    still pays the recomputation."""
    x, r, *params, net = make_linear({"depth": 8, "width": 64, "batch": 32}, FP32, device, seed=2)
    excluded = (x, r, *params)

    def saved(forward):
        xg = x.detach().requires_grad_(True)
        return measure.saved_tensor_bytes(lambda: forward(net.blocks, xg), exclude=excluded)[1]

    plain, per_block = saved(plain_forward), saved(per_block_forward)
    t_plain = median_time(lambda: _grads(plain_forward, x, r, params, net), device)
    t_ckpt = median_time(lambda: _grads(per_block_forward, x, r, params, net), device)
    return judge_no_saving_block(plain, per_block, t_ckpt / t_plain - 1, device.type)


def judge_no_saving_block(plain: int, per_block: int, overhead: float, where: str) -> Finding:
    """The catalogue's model, context: a block whose only saved tensor is its input gains nothing
    from checkpointing (per-block saves at least what plain saves)."""
    as_modelled = per_block >= plain
    return Finding(
        Verdict.HOLDS if as_modelled else Verdict.FAILS,
        f"8 blocks h+W·h: plain keeps {plain} B, per-block checkpoint {per_block} B "
        f"({per_block - plain:+d} B): "
        + ("nothing saved" if as_modelled else "SAVED, where the model says it cannot")
        + f"; time {overhead:+.0%} ({where}, median of 3)",
    )


def check_saves_inputs_only(device):
    """The notes (the docs they quote): in forward the checkpointed `function` runs "in
    torch.no_grad() manner, i.e., not storing the intermediate activations. Instead, the forward
    pass saves the inputs tuple". Counted with saved_tensors_hooks (parameters left out) for one
    MLP block, in both modes; whether grad mode is off inside the function is observed too."""
    x, r, *params, net = make_mlp({"depth": 1, "width": 64, "batch": 32}, FP32, device, seed=4)
    block, boundary = net.blocks[0], x.numel() * x.element_size()
    grad_mode = {}

    def spy(reentrant):
        def run(h):
            grad_mode.setdefault(reentrant, torch.is_grad_enabled())
            return block(h)

        return run

    def saved(forward):
        xg = x.detach().requires_grad_(True)
        return measure.saved_tensor_bytes(lambda: forward(xg), exclude=tuple(params))[1]

    plain = saved(block)
    modes = {
        reentrant: saved(lambda h, re=reentrant: checkpoint(spy(re), h, use_reentrant=re))
        for reentrant in (True, False)
    }
    return judge_saves_inputs_only(plain, modes, grad_mode, boundary)


def judge_saves_inputs_only(plain: int, checkpointed: dict, grad_mode: dict, input_bytes: int) -> Finding:
    """`checkpointed`: use_reentrant → bytes saved in forward; `grad_mode`: use_reentrant → grad
    mode inside the function. The notes quote the docs of the reentrant mode, the default of their
    call: holds when it saves no more than the input while plain saves more (the intermediate
    activations), with grad mode off inside ("in torch.no_grad() manner"); fails otherwise. The
    other mode is evidence: it runs with grad mode on and drops what it would save instead."""
    reentrant = checkpointed.get(True)
    inputs_only = reentrant is not None and reentrant <= input_bytes and plain > input_bytes
    no_grad = grad_mode.get(True) is False
    return Finding(
        Verdict.HOLDS if inputs_only and no_grad else Verdict.FAILS,
        f"one MLP block, input {input_bytes} B: plain saves {plain} B; checkpointed "
        + ", ".join(
            f"use_reentrant={re}: {b} B (grad mode inside the function "
            f"{'on' if grad_mode.get(re) else 'off'})"
            for re, b in checkpointed.items()
        )
        + ("" if inputs_only else ": the default (reentrant) mode saves MORE than the inputs")
        + ("" if no_grad else ": the default (reentrant) mode does NOT run the function without grad"),
    )


def check_outputs(device):
    """The notes: "The output of function can contain non-Tensor values and gradient recording is
    only performed for the Tensor values. … Tensors nested in custom structures will not be
    considered as part of autograd." Observed in both modes on (tensor, 3, [tensor])."""
    lin = nn.Linear(8, 8).to(device)

    def fn(h):
        return torch.tanh(lin(h)), 3, [lin(h) * 2]

    seen = {}
    for reentrant in (True, False):
        x = torch.randn(4, 8, generator=generator(device, 12), device=device, requires_grad=True)
        top, extra, nested = checkpoint(fn, x, use_reentrant=reentrant)
        seen[reentrant] = (extra == 3 and top.requires_grad, nested[0].requires_grad)
    return judge_outputs(seen)


def judge_outputs(seen: dict) -> Finding:
    """`seen`: use_reentrant → (non-Tensor output passed through and the Tensor output tracked,
    the nested Tensor tracked). The statement holds where the top-level Tensor is tracked and
    the nested one is not; a mode that tracks the nested one too makes it depend on the mode."""
    if not all(top for top, _ in seen.values()):
        return Finding(
            Verdict.FAILS, f"a non-Tensor value or the Tensor output was not returned/tracked: {seen}"
        )
    untracked = [re for re, (_, nested) in seen.items() if not nested]
    what = "; ".join(
        f"use_reentrant={re}: the nested tensor is {'tracked' if nested else 'NOT tracked'}"
        for re, (_, nested) in seen.items()
    )
    base = "a non-Tensor output (3) is returned as is and the Tensor output is tracked in both modes; "
    if len(untracked) == len(seen):
        return Finding(Verdict.HOLDS, base + what)
    if untracked:
        return Finding(
            Verdict.DEPENDS,
            base + what + f": the statement holds only with use_reentrant={untracked[0]} (the docs the notes "
            "quote describe that mode)",
        )
    return Finding(Verdict.FAILS, base + what)


# 004's `toy`, read from the note as written (with its checkpoint import).
NOTES_TOY = parse.snippet("004#2").source


def check_notes_toy(device):
    """004's `toy`, as written: built (it raises: no super().__init__()), then with that slip
    repaired, used as a model is — its input a data batch that does not require grad — with the
    notes' call `checkpoint(self.net,x)` (no use_reentrant: torch's reentrant default). Beside it:
    the same toy with use_reentrant=False, and the default on an input that requires grad (a
    part inside a model)."""
    import warnings

    scope = {"nn": nn, "checkpoint": checkpoint}
    exec(NOTES_TOY, scope)
    try:
        scope["toy"]()
        init_error = ""
    except AttributeError as exc:
        init_error = str(exc)
    repaired = {"nn": nn, "checkpoint": checkpoint}
    exec(
        NOTES_TOY.replace("  def __init__(self):\n", "  def __init__(self):\n    super().__init__()\n"),
        repaired,
    )
    model = repaired["toy"]().to(device)
    x = torch.randn(4, 10, generator=generator(device, 11), device=device)
    params = list(model.parameters())
    plain = torch.autograd.grad(model.net(x).sum(), params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = model(x)  # the notes' call, as written
        inner = checkpoint(model.net, x.clone().requires_grad_(True))
    deprecation = next((str(w.message) for w in caught if "use_reentrant" in str(w.message)), "")
    default_grads = out.requires_grad and all(
        g is not None for g in torch.autograd.grad(out.sum(), params, allow_unused=True)
    )
    inner_grads = inner.requires_grad
    kept = torch.autograd.grad(checkpoint(model.net, x, use_reentrant=False).sum(), params)
    equal = all(torch.equal(a, b) for a, b in zip(kept, plain))
    return judge_notes_toy(init_error, default_grads, deprecation, equal, inner_grads)


def judge_notes_toy(
    init_error: str, default_gets_grads: bool, deprecation: str, fixed_equal: bool, inner_gets_grads: bool
) -> Finding:
    """The notes' toy, "applied on any part of a model": holds where, called as written on a batch
    that does not require grad, its Linear gets gradients; fails where it gets none (the reentrant
    default tracks only inputs that require grad), the evidence saying whether use_reentrant=False
    gives plain backward's gradients bit for bit and whether the default works inside a model.
    The toy's missing super().__init__() (it raises when built) and the call's omitted
    use_reentrant (deprecated: torch warns) are slips of the pen, errata, repaired before judging."""
    errata = []
    if init_error:
        errata.append(
            Erratum(
                ErratumKind.RAISES,
                "self.net = nn.Linear(10,10)",
                f"toy() raises AttributeError ({init_error}): __init__ never calls super().__init__()",
            )
        )
    if deprecation:
        errata.append(
            Erratum(
                ErratumKind.DEPRECATED_API,
                "x = checkpoint(self.net,x)",
                f"warns: {deprecation.split('. ')[0]}; pass use_reentrant explicitly (False is recommended)",
            )
        )
    fixed = "with use_reentrant=False it gets " + (
        "gradients bit-identical to plain backward"
        if fixed_equal
        else "gradients that DIFFER from plain backward"
    )
    inner = "; inside a model (an input that requires grad) the default " + (
        "does track it" if inner_gets_grads else "does NOT track it either"
    )
    if default_gets_grads:
        return Finding(
            Verdict.HOLDS,
            "the notes' toy (super().__init__() added), called as written on a batch that does not require "
            f"grad, gets its Linear's gradients; {fixed}{inner}",
            tuple(errata),
        )
    return Finding(
        Verdict.FAILS,
        "the notes' toy (super().__init__() added), called as written on a batch that does not require grad, "
        "gives its Linear NO gradient: the output has no grad_fn (the reentrant default, with no input "
        f"requiring grad; backward raises); {fixed}{inner}: use checkpoint(self.net, x, use_reentrant=False)",
        tuple(errata),
    )


_DEPTH_AND_WIDTH = {
    "quick": [{"depth": 8, "width": 64, "batch": 256}],  # activations > grads
    "full": [{"depth": d, "width": 2048, "batch": 8192} for d in (16, 64)],
}


def _chain_tolerance(block_terms: int) -> dict:
    """fp32 gradients through a residual chain, bounded from its depth, its reductions and u.

    Every block's GEMMs sum `block_terms` × width products per output (forward, and the same
    again transposed in backward): ~u·√K of the terms' size each. The residual path carries
    each block's rounding to the output with the signal itself (h + f(h): a relative error is
    neither amplified nor damped by a well-conditioned chain), and roundings of different blocks
    are independent, so they add like a random walk: u·√(depth·K). A weight gradient then sums
    δ·hᵀ over the batch's tokens once more: u·√tokens. Both land on small entries as on large
    ones, so the bound is a floor at each gradient's own scale (the deep linear chain's grow
    ~1.15× per block: max|grad| ≈ 1e3 at depth 64). Measured, linear at depth 64, width 2048:
    69u on an H100 at batch 8192 (4.2e-3 absolute on gradients of scale 1e3) against 453u here;
    31u on a CPU at batch 128 against 373u.
    """
    u = UNIT_ROUNDOFF[FP32]

    def at(size) -> Tol:
        # The transformer's batch is batch//16 sequences of 16 tokens: as many tokens.
        chain = math.sqrt(size["depth"] * block_terms * size["width"])
        return Tol(rtol=8 * u, floor=u * (chain + math.sqrt(size["batch"])))

    return {FP32: at}


# ---- the working set: what a size needs on the device, the float64 oracle included --------------
#
# Counted in elements of one boundary tensor b = tokens × width and of the parameters P, from the
# blocks above and measured (the CPU profiler's allocation events at depths 4-9, widths 64-256;
# the H100's allocator peaks at depth 16/64, width 2048: plain MLP 67b and 259b, plain transformer
# 303b, its √n segments 115b, all at or under these figures):
#   a: what one block saves for backward, in b: the MLP 4, the transformer 20 (measured 18.4 on the
#      CPU, 18.9 on the H100), h + W·h 1;
#   8b of transients on top (GEMM outputs, the dropout draw, the loss and its gradient), and the P
#   gradients.
# The oracle runs the same plain backward in float64 on a float64 copy of the model (2P: the copy
# and its gradients), with the inputs (P + 3b: parameters, x, r) held in the dtype; its truth
# (P + b float64 gradients) is held while a variant runs. The first variant of a size reaches the
# larger of the two, which is what the harness must find room for before it makes anything
# (plan.oversize_reason). At depth 64, width 2048 the transformer's 3.2 B parameters and 1280
# saved b of 64 MiB make the oracle ~220 GiB: no 80 GiB or 141 GiB GPU takes that size.
_SAVED_PER_BLOCK = {"mlp": 4, "transformer": 20, "linear": 1}
_PARAMS_PER_BLOCK = {  # weights and biases (and the transformer's two LayerNorms) of one block
    "mlp": lambda w: 2 * (w * w + w),
    "transformer": lambda w: 12 * w * w + 13 * w,
    "linear": lambda w: w * w + w,
}
_TRANSIENTS = 8
FLOAT64_BYTES = 8


def _tokens(family: str, size) -> int:
    return max(size["batch"] // 16, 1) * 16 if family == "transformer" else size["batch"]


def saved_boundaries(forward: str, depth: int, a: int) -> int:
    """What `forward` keeps for backward at its forward's end, in b: every block's activations
    (plain); one boundary per block plus one block recomputed (per_block); √n segments' inputs plus
    one segment's activations (checkpoint_sequential)."""
    if forward == "plain":
        return a * depth
    if forward == "per_block":
        return depth + a
    k = segments_for(depth)
    return k + math.ceil(depth / k) * a


def peak_estimate(family: str, forward: str):
    """`peak_bytes(size, itemsize)` for `forward` on `family`'s blocks, the oracle included."""
    a, per_block = _SAVED_PER_BLOCK[family], _PARAMS_PER_BLOCK[family]

    def peak_bytes(size, itemsize: int) -> int:
        b = _tokens(family, size) * size["width"]
        p = size["depth"] * per_block(size["width"])
        inputs = itemsize * (p + 3 * b)
        oracle = FLOAT64_BYTES * (a * size["depth"] * b + _TRANSIENTS * b + 2 * p)
        truth = FLOAT64_BYTES * (p + b)
        variant = itemsize * (saved_boundaries(forward, size["depth"], a) * b + _TRANSIENTS * b + p)
        return inputs + max(oracle, truth + variant)

    return peak_bytes


# Reductions per block, in units of the width: h + W·h one (W·h); the MLP block two (fc1, fc2);
# the transformer block qkv, proj and fc1 one each, fc2 four (it reads 4·width), scores and
# att·v a head dimension (32) and a sequence (16), under one width: 7 + 1.
LINEAR_TOL, MLP_TOL, TRANSFORMER_TOL = _chain_tolerance(1), _chain_tolerance(2), _chain_tolerance(8)

CASE = Case(
    id="memory.checkpoint",
    tier=1,
    claim="torch.utils.checkpoint trades compute for memory: the checkpointed part keeps only its inputs and "
    "recomputes activations in backward (same results, same dropout with preserve_rng_state).",
    source="004 内存分配 / check pointing",
    # fp32 gradients held to IEEE-derived bounds: a forced TF32 cuBLAS would fail them, not the technique.
    requires=("ieee_fp32",),
    make_inputs=make_mlp,
    variants={
        # plain backward is the baseline (context); each checkpointed way's gradients against the
        # float64 truth decide "same_gradients".
        "mlp.plain": naive(
            _variant(plain_forward), tolerance=MLP_TOL, peak_bytes=peak_estimate("mlp", "plain")
        ),
        "mlp.per_block": optimized(
            _variant(per_block_forward),
            tolerance=MLP_TOL,
            claim="same_gradients",
            peak_bytes=peak_estimate("mlp", "per_block"),
        ),
        "mlp.sqrt_segments": optimized(
            _variant(sqrt_segments_forward),
            tolerance=MLP_TOL,
            claim="same_gradients",
            peak_bytes=peak_estimate("mlp", "sqrt_segments"),
        ),
        "transformer.plain": naive(
            _variant(plain_forward),
            inputs=make_transformer,
            tolerance=TRANSFORMER_TOL,
            peak_bytes=peak_estimate("transformer", "plain"),
        ),
        "transformer.per_block": optimized(
            _variant(per_block_forward),
            inputs=make_transformer,
            tolerance=TRANSFORMER_TOL,
            claim="same_gradients",
            peak_bytes=peak_estimate("transformer", "per_block"),
        ),
        "transformer.sqrt_segments": optimized(
            _variant(sqrt_segments_forward),
            inputs=make_transformer,
            tolerance=TRANSFORMER_TOL,
            claim="same_gradients",
            peak_bytes=peak_estimate("transformer", "sqrt_segments"),
        ),
        "linear.plain": naive(
            _variant(plain_forward),
            inputs=make_linear,
            tolerance=LINEAR_TOL,
            peak_bytes=peak_estimate("linear", "plain"),
        ),
        "linear.per_block": optimized(
            _variant(per_block_forward),
            inputs=make_linear,
            tolerance=LINEAR_TOL,
            claim="same_gradients",
            peak_bytes=peak_estimate("linear", "per_block"),
        ),
    },
    oracle=grads_float64,
    # The float64 run has the same weights and dropout masks, so only rounding separates it from
    # the fp32 ones; each block family is held to its own chain bound (above). The GEMMs are
    # cuBLAS's, IEEE fp32 by default (a TF32 setting, ~1e-3 per GEMM, fails these bounds).
    tolerance=MLP_TOL,
    dtypes={"cpu": (FP32,), "cuda": (FP32,)},
    sizes=_DEPTH_AND_WIDTH,
    claims=(
        Claim(
            "trades_memory",
            "Checkpointing works by trading compute for memory. Rather than storing all intermediate "
            "activations of the entire computation graph for computing backward, the checkpointed part "
            "does **not** save intermediate activations, and instead recomputes them in backward pass.",
            "004",
            ClaimKind.MEMORY,
            reading="checkpointing each block, as the notes' toy checkpoints its module "
            "(use_reentrant=False, the deprecated default repaired), peaks at less memory "
            "than plain backward",
        ),
        Claim(
            "saves_inputs_only",
            "in the forward pass, `function` will run in … manner, i.e., not storing the intermediate "
            "activations. Instead, the forward pass saves the inputs tuple and the `function` parameter.",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="with the notes' call (the reentrant default) the function runs with grad mode off and "
            "the forward saves no more than its input, where plain autograd saves the activations",
        ),
        Claim(
            "same_gradients",
            "In the backwards pass, the saved inputs and `function` is retrieved, and the forward pass is "
            "computed on `function` again, now tracking the intermediate activations, and then the "
            "gradients are calculated using these activation values.",
            "004",
            ClaimKind.CORRECTNESS,
            reading="checkpointed blocks (use_reentrant=False) give plain backward's gradients, held to the "
            "float64 truth within fp32's chain bound",
        ),
        Claim(
            "toy",
            "It can be applied on any part of a model. … "
            "x = checkpoint(self.net,x) #计算该模块时利用checkpoint技术",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the notes' toy (its missing super().__init__() repaired), called as written on a data "
            "batch (no requires_grad), gives its Linear gradients",
        ),
        Claim(
            "preserve_rng_state",
            "torch.utils.checkpoint.checkpoint(functions, *args,**preserve_rng_state**)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the listed preserve_rng_state parameter (default True) makes the recomputation draw the "
            "forward's dropout masks, so the gradients equal plain backward's; without it they differ",
        ),
        Claim(
            "outputs",
            "The output of `function` can contain non-Tensor values and gradient recording is only "
            "performed for the Tensor values. … these Tensors nested in custom structures will not be "
            "considered as part of autograd.",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="a non-Tensor output passes through, the Tensor output is tracked, a Tensor nested in a "
            "list is not (in each use_reentrant mode)",
        ),
    ),
    checks={
        "rng_preserved": Check(check_rng_preserved, claim="preserve_rng_state"),
        # The √n rule and the h+W·h block are the catalogue's model, context.
        "segments_sweep": Check(check_segments_sweep),
        "no_saving_block": Check(check_no_saving_block),
        "notes_toy": Check(check_notes_toy, claim="toy"),
        "saves_inputs_only": Check(check_saves_inputs_only, claim="saves_inputs_only"),
        "outputs": Check(check_outputs, claim="outputs"),
    },
    metrics=saved_activation_metrics,
    verdict=AllOf(
        (
            # The notes checkpoint one module at a time (their toy): per block decides the claim.
            AllOf(
                (
                    Lighter("mlp.per_block", "mlp.plain"),
                    Lighter("transformer.per_block", "transformer.plain"),
                ),
                claim="trades_memory",
            ),
            # checkpoint_sequential's √n segments: the catalogue's way, context.
            Lighter("mlp.sqrt_segments", "mlp.plain"),
            Lighter("transformer.sqrt_segments", "transformer.plain"),
            FromFindings(),
        )
    ),
    x="depth",
)
