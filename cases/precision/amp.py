"""Automatic mixed precision: autocast + GradScaler vs an fp32 training step (notes 003, 自动混合精度训练).

The notes use `torch.cuda.amp.autocast` / `torch.cuda.amp.GradScaler`, say mixed precision "only
runs on the GPU", that "AMP is not necessarily faster or smaller", and describe GradScaler's
semantics: `scale(loss)` multiplies by `get_scale()`, `unscale_` divides the grads in place, the
state machine READY → UNSCALED → STEPPED forbids a second `unscale_` before `update`. This case
uses the current API (`torch.autocast(device_type, dtype)`, `torch.amp.GradScaler(device)`),
times a whole training step per precision, and turns each semantic claim into a check.

The case's dtype axis is the *autocast* dtype: every dtype group holds the fp32 step (the
baseline; the same work in each group) and the autocast step in that dtype, fp16 with a
GradScaler, bf16 without (its 8-bit exponent has fp32's range, so gradients do not underflow).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from cases._lib.init import perturb_norms
from cases._lib.inputs import generator
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import (
    Case,
    Check,
    Claim,
    ClaimKind,
    Erratum,
    ErratumKind,
    Finding,
    InputFamily,
    Tol,
    Verdict,
    naive,
    optimized,
)
from harness.contract.rules import AllOf, AnyOf, FromFindings, NotFaster, NotLighter
from notes import parse
from notes.deprecation import is_deprecation

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16
CLASSES = 16


class TransformerBlock(nn.Module):
    """Pre-LN block + classifier head: the GEMM-heavy shape where autocast pays on tensor cores."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, w)
        x = x + self.proj(a)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return self.head(x.mean(1))


class ConvNet(nn.Module):
    """Three 3×3 convs + GroupNorm (no BatchNorm: no running buffers to carry between steps)."""

    def __init__(self, channels):
        super().__init__()
        c = channels
        self.c1, self.c2, self.c3 = (
            nn.Conv2d(3, c, 3, padding=1),
            nn.Conv2d(c, c, 3, 2, 1),
            nn.Conv2d(c, c, 3, padding=1),
        )
        self.norm = nn.GroupNorm(8, c)
        self.head = nn.Linear(c, CLASSES)

    def forward(self, x):
        x = F.gelu(self.c1(x))
        x = F.gelu(self.norm(self.c2(x)))
        x = F.gelu(self.c3(x))
        return self.head(x.mean((2, 3)))


@dataclass(frozen=True, eq=False)
class Step:
    """What a training run is, besides its tensors: the module (its own parameters are not used;
    the run's parameters come from the inputs, through functional_call), steps, lr, autocast dtype."""

    module: nn.Module
    names: tuple[str, ...]
    steps: int
    lr: float
    amp_dtype: torch.dtype


def _make(build, data_shape, size, dtype, device, seed):
    torch.manual_seed(seed)  # nn.Module init draws from the global RNG (of `device`)
    with torch.device(device):  # a full-size model initialised on the CPU costs seconds
        module = perturb_norms(build(size))
    g = generator(device, seed + 1)
    x = torch.randn((size["batch"], *data_shape(size)), generator=g, device=device)
    y = torch.randint(0, CLASSES, (size["batch"],), generator=g, device=device)
    names = tuple(n for n, _ in module.named_parameters())
    params = tuple(p.detach().clone() for p in module.parameters())
    return (x, y, *params, Step(module, names, steps=3, lr=0.2, amp_dtype=dtype))


def make_transformer(size, dtype, device, seed):
    w = size["width"]
    return _make(lambda s: TransformerBlock(w, max(w // 64, 1)), lambda s: (16, w), size, dtype, device, seed)


def make_convnet(size, dtype, device, seed):
    # fp16 autocast on CPU runs convolutions through slow reference kernels (a conv backward was
    # measured ~200× fp32 here, and a large run hung for minutes): fp16 on CPU gets tiny images.
    side = 8 if (dtype == FP16 and torch.device(device).type == "cpu") else 16
    c = max(size["width"] // 4, 8)
    return _make(lambda s: ConvNet(c), lambda s: (3, side, side), size, dtype, device, seed)


def _forward(module, params, x):
    return functional_call(module, params, (x,))


def train(
    x,
    y,
    *params_and_step,
    amp: bool = False,
    scaler_enabled: bool | None = None,
    forward=_forward,
    notes_api: bool = False,
):
    """k SGD steps from the given parameters; returns the k losses (fp32), each before its update.

    Per step: forward, backward (~2× forward flops), one read-modify-write of every parameter.
    Under autocast the GEMMs/convs run in the low dtype and their outputs (the saved activations)
    are half the bytes; parameters and gradients stay fp32 ("master weights"). `notes_api`: the
    notes' own objects, torch.cuda.amp.autocast(enabled=...) (float16) and
    torch.cuda.amp.GradScaler(enabled=...), their deprecation warnings silenced (an erratum of the
    notes, listed by `check_deprecated_spelling`).
    """
    *params, step = params_and_step
    device = x.device
    ps = [p.detach().clone().requires_grad_(True) for p in params]
    opt = torch.optim.SGD(ps, lr=step.lr)
    use_scaler = amp and step.amp_dtype == FP16 if scaler_enabled is None else scaler_enabled
    if notes_api:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            scaler = torch.cuda.amp.GradScaler(enabled=use_scaler)
    else:
        scaler = torch.amp.GradScaler(device.type, enabled=use_scaler)
    losses = []
    for _ in range(step.steps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            context = (
                torch.cuda.amp.autocast(enabled=amp)
                if notes_api
                else torch.autocast(device.type, dtype=step.amp_dtype if amp else FP32, enabled=amp)
            )
        with context:
            out = forward(step.module, dict(zip(step.names, ps)), x)
        # The loss in fp32 (as autocast itself would) from a low-precision output; float64 stays.
        loss = F.cross_entropy(out.float() if out.dtype in (FP16, BF16) else out, y)
        losses.append(loss.detach())
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return torch.stack(losses)


def fp32_step(*inputs):
    return train(*inputs)


def _compile_the_model(compile_fn):
    """torch.compile as a user applies it to a training step: to the model's forward (backward
    through AOTAutograd), the optimizer, GradScaler and loop left eager. Compiling the whole step
    instead traced the optimizer's and scaler's construction on every call (6 graph breaks, 38×
    slower than eager on the CPU), which says nothing about the model."""
    forward = compile_fn(_forward)

    def step(*inputs):
        return train(*inputs, forward=forward)

    return step


fp32_step.__compile__ = _compile_the_model  # harness.measure.compiled.Compiled uses it


def amp_step(*inputs):
    return train(*inputs, amp=True)


def notes_amp_step(*inputs):
    """The notes' objects as they teach them: torch.cuda.amp.autocast (float16) with
    torch.cuda.amp.GradScaler, on CUDA."""
    return train(*inputs, amp=True, notes_api=True)


def train_float64(x, y, *params_and_step):
    """The same k steps in float64 without autocast or scaler: the truth the losses are held to."""
    *params, step = params_and_step
    ps = [p.double() for p in params]
    return train(x.double(), y, *ps, step).double()


# ---- GradScaler semantics, each as a check --------------------------------------------------------


def _notes_example(device):
    """The notes' own example: x=[1,2], z=[2,3], y=Σx+Σz, SGD lr=1e-3."""
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    z = torch.tensor([2.0, 3.0], device=device, requires_grad=True)
    return x, z, torch.optim.SGD([x, z], lr=1e-3), torch.amp.GradScaler(device.type)


def check_scale_multiplies(device):
    """The notes: scale(loss).backward() is (loss·get_scale()).backward(), one factor shared by
    every parameter; their example prints the scale as 65535 after unscale_."""
    x, z, opt, scaler = _notes_example(device)
    y = x.sum() + z.sum()
    scaled = scaler.scale(y)
    scale = scaler.get_scale()
    scaled.backward()
    grads = x.grad.tolist() + z.grad.tolist()
    scaler.unscale_(opt)
    return judge_scale_multiplies(y.item(), scaled.item(), scale, grads, scaler.get_scale())


def judge_scale_multiplies(
    loss: float, scaled: float, scale: float, grads: list, scale_after_unscale: float
) -> Finding:
    """Holds when scale(loss) = loss·get_scale() and every parameter's grad (all 1 in the notes'
    example) is that one factor. The notes' comment "# [1, 1], 65535" for get_scale() after
    unscale_ is a typo where the scale reads 2**16 = 65536: two lines above, the same example
    prints the grads scaled by that factor as "[65536, 65536]", so the intent is plain."""
    shared = scaled == loss * scale and all(g == scale for g in grads)
    errata = ()
    if scale_after_unscale != 65535:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "print(x.grad, scaler.get_scale()) # [1, 1], 65535",
                f"get_scale() after unscale_ is {scale_after_unscale:.0f} (the default init_scale 2**16), "
                "not 65535; the notes print the grads scaled by it as [65536, 65536] two lines above",
            ),
        )
    return Finding(
        Verdict.HOLDS if shared else Verdict.FAILS,
        f"scale(loss) = {scaled:g} for loss {loss:g} and get_scale() {scale:.0f}: "
        + ("= loss·get_scale()" if scaled == loss * scale else "NOT loss·get_scale()")
        + f"; grads {grads} ({'one shared factor' if shared else 'NOT the one factor'})",
        errata,
    )


def check_unscale_in_place(device):
    """The notes: step() first divides every .grad in place (it calls unscale_), then steps."""
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    grad, ptr = x.grad, x.grad.data_ptr()
    scaler.unscale_(opt)
    same_tensor = x.grad is grad and x.grad.data_ptr() == ptr
    unscaled, scale_kept = x.grad.tolist(), scaler.get_scale() == 2.0**16
    # step() without a manual unscale_ (the notes' two lines commented out): the true grads, 1.
    y, w, opt2, scaler2 = _notes_example(device)
    scaler2.scale(y.sum() + w.sum()).backward()
    scaler2.step(opt2)
    moved = [1 - y[0].item(), 2 - y[1].item()]
    return judge_unscale_in_place(same_tensor, unscaled, scale_kept, moved, lr=1e-3)


def judge_unscale_in_place(
    same_tensor: bool, unscaled: list, scale_kept: bool, moved: list, lr: float
) -> Finding:
    """Holds when unscale_ divides .grad in place (the same tensor, grads back to 1, the scale
    unchanged) and step() alone moves the parameters by lr·(true grad), so it unscaled first:
    x − lr·1 rounds to x's fp32 ulp (≤ 2⁻²³ for x < 2), allowed twice; a step by the scaled grad
    moves x by 65.5, an unscaled-twice one by 1.5e-8."""
    right_step = all(abs(m - lr) <= 2 * 2.0**-23 for m in moved)
    holds = same_tensor and unscaled == [1.0] * len(unscaled) and scale_kept and right_step
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"unscale_ {'divides .grad in place (same storage)' if same_tensor else 'REPLACED the grad tensor'}: "
        f"{unscaled}; scale {'unchanged' if scale_kept else 'CHANGED'}; step() alone moved x by "
        f"{[round(m, 7) for m in moved]} (lr·1 = {lr:g}: "
        f"{'unscaled first' if right_step else 'NOT unscaled'})",
    )


def check_double_unscale_raises(device):
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    scaler.unscale_(opt)

    def raised(call):
        try:
            call()
        except RuntimeError as exc:
            return str(exc)
        return None

    message = raised(lambda: scaler.unscale_(opt))
    scaler.step(opt)  # READY → UNSCALED → STEPPED; step does not unscale twice
    after_step = raised(lambda: scaler.unscale_(opt))
    scaler.update()
    scaler.scale(x.sum()).backward()
    after_update = raised(lambda: scaler.unscale_(opt))  # update() → READY again
    return judge_double_unscale(message, after_step, after_update)


def judge_double_unscale(second: str | None, after_step: str | None, after_update: str | None) -> Finding:
    """The notes' state machine: unscale_ raises when UNSCALED or STEPPED, and works again after
    update() (READY). Each of the three observed: the error message, or None where none was raised."""
    holds = second is not None and after_step is not None and after_update is None
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"second unscale_ {'raises ' + repr(second) if second else 'does NOT raise'}; after step() "
        f"{'raises ' + repr(after_step) if after_step else 'does NOT raise'}; after update() "
        + ("works" if after_update is None else f"RAISES {after_update!r}"),
    )


def check_update_from_each_state(device):
    """The notes' table: "update: READY/UNSCALED/STEPPED -> READY". From each state of the notes'
    example (after scale(y).backward(): READY; after unscale_: UNSCALED; after step: STEPPED),
    update() is called: the error it raises, or the state it leaves (read from the scaler's
    per-optimizer record, the state the notes describe)."""
    seen = {}
    for state in ("READY", "UNSCALED", "STEPPED"):
        x, z, opt, scaler = _notes_example(device)
        scaler.scale(x.sum() + z.sum()).backward()
        if state == "UNSCALED":
            scaler.unscale_(opt)
        elif state == "STEPPED":
            scaler.step(opt)
        try:
            scaler.update()
            stage = scaler._per_optimizer_states[id(opt)]["stage"]
            seen[state] = getattr(stage, "name", str(stage))
        except (AssertionError, RuntimeError) as exc:
            seen[state] = f"raises {type(exc).__name__}: {exc}"
    return judge_update_from_each_state(seen)


def judge_update_from_each_state(seen: dict) -> Finding:
    """`seen`: state → the state update() left ("READY") or the error it raised. Holds where update()
    takes each of READY, UNSCALED and STEPPED to READY; fails where it raises from one (GradScaler's
    update needs the inf checks that unscale_ or step record: from READY there are none)."""
    wrong = {state: out for state, out in seen.items() if out != "READY"}
    told = "; ".join(f"update() from {state}: {out}" for state, out in seen.items())
    if wrong or len(seen) < 3:
        why = (
            ": update() needs the inf checks that unscale_ or step() record, and in READY there are none"
            if "READY" in wrong
            else ""
        )
        return Finding(
            Verdict.FAILS, f"{told}: NOT READY after update() from {sorted(wrong) or 'every state'}{why}"
        )
    return Finding(Verdict.HOLDS, told)


def check_inf_skips_step(device):
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    x.grad[0] = float("inf")
    before = (x.detach().clone(), z.detach().clone())
    scaler.step(opt)
    scaler.update()
    unchanged = torch.equal(x, before[0]) and torch.equal(z, before[1])
    backed_off = scaler.get_scale()
    opt.zero_grad()
    scaler.scale(x.sum() + z.sum()).backward()
    scaler.step(opt)
    resumed = not torch.equal(z, before[1])
    return judge_inf_skips_step(unchanged, backed_off, resumed)


def judge_inf_skips_step(unchanged: bool, scale_after: float, resumed: bool) -> Finding:
    """The notes: update() "大概是更新放缩比例" (updates the scale). Holds when an inf grad skips
    the step (parameters unchanged), update() backs the scale off (2**16 → 2**15 by the default
    factor 0.5), and the next finite step updates again."""
    holds = unchanged and scale_after == 2.0**15 and resumed
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"an inf grad {'skips' if unchanged else 'does NOT skip'} optimizer.step; update() sets the scale to "
        f"{scale_after:.0f} (2**15 expected); the next finite step "
        f"{'updates' if resumed else 'does NOT update'}",
    )


def check_clip_after_unscale(device):
    """Clip after unscale_ clips the true gradient (the notes' numbers); clip before it clips
    the scaled one, and the following step moves the parameters 65536× too little."""
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(x, 1.0)
    torch.nn.utils.clip_grad_norm_(z, 1.0)
    clipped = x.grad.tolist()
    scaler.step(opt)
    stepped = x.tolist()

    wx, wz, wopt, wscaler = _notes_example(device)
    wscaler.scale(wx.sum() + wz.sum()).backward()
    torch.nn.utils.clip_grad_norm_(wx, 1.0)  # the scaled grads: norm 65536·√2 → clipped to 1
    wscaler.step(wopt)
    return judge_clip_after_unscale(clipped, stepped, (1 - wx[0]).item())


def judge_clip_after_unscale(clipped: list, stepped: list, moved_wrong: float) -> Finding:
    """The notes' example: after unscale_, clip_grad_norm_(x, 1.) gives [0.7, 0.7] and the step
    x → [0.9993, 1.9993]. Bounds: coef = 1/(√2 + 1e-6) sits 7.1e-7 below 1/√2 and rounds 3u more:
    within 1e-6 relative; x − lr·g rounds to x's ulp: 2u relative. Clipping before unscale_ clips
    the scaled grads and moves x by 2⁻¹⁶ of the right step, below a thousandth of it."""
    right_clip = all(math.isclose(g, 2**-0.5, rel_tol=1e-6) for g in clipped)
    expected = [1 - 1e-3 * 2**-0.5, 2 - 1e-3 * 2**-0.5]
    right_step = all(math.isclose(a, b, rel_tol=2 * U[FP32]) for a, b in zip(stepped, expected))
    wrong_order_shows = moved_wrong < 1e-3 * 2**-0.5 / 1000
    holds = right_clip and right_step and wrong_order_shows
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"clip after unscale_: grads {[round(g, 4) for g in clipped]}, x → {[round(v, 4) for v in stepped]} "
        f"(the notes: [0.7, 0.7], [0.9993, 1.9993]"
        f"{'' if right_clip and right_step else ': NOT reproduced'}); "
        f"clipping before unscale_ moves x by {moved_wrong:.2g} instead of 7.1e-4",
    )


def check_fp16_needs_scaler(device):
    """Why fp16 needs the scaler: a gradient below fp16's smallest subnormal (2⁻²⁴ ≈ 6e-8) is
    flushed to zero in an fp16 backward; scaled by 2¹⁶ it survives and is unscaled in fp32."""
    w = torch.full((64, 64), 1e-4, device=device, requires_grad=True)
    x = torch.full((8, 64), 1e-4, device=device)
    opt = torch.optim.SGD([w], lr=1.0)
    results = {}
    for enabled in (False, True):
        w.grad = None
        scaler = torch.amp.GradScaler(device.type, enabled=enabled)
        with torch.autocast(device.type, dtype=FP16):
            h = x @ w  # an fp16 GEMM; its backward x^T·dh runs in fp16 too
        loss = (h.float() * 1e-5).sum()  # dloss/dh = 1e-5: grad(w) = Σ_batch x·1e-5 = 8e-9
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        results[enabled] = w.grad.abs().max().item()
    return judge_fp16_needs_scaler(results[False], results[True], truth=8 * 1e-4 * 1e-5)


def judge_fp16_needs_scaler(unscaled: float, scaled: float, truth: float) -> Finding:
    """Context (the notes do not say why fp16 needs scaling): the true grad, below fp16's range,
    underflows without the scaler (< truth/2) and survives with it: fp16 roundings of x and of
    dh = 2¹⁶·1e-5 and an 8-term fp16 product, ≤ 11u₁₆ = 5.4e-3 (the unscale is exact); 1e-2."""
    survives = scaled == scaled and math.isclose(scaled, truth, rel_tol=1e-2)
    underflows = unscaled < truth / 2
    return Finding(
        Verdict.HOLDS if survives and underflows else Verdict.FAILS,
        f"a true grad of {truth:.1e}: without scaling {unscaled:.3g} after the fp16 backward"
        f"{'' if underflows else ' (did NOT underflow)'}, with GradScaler {scaled:.3g}"
        f"{'' if survives else ' (NOT the true grad)'}",
    )


# 003's usage example (its GradScaler block), read from the note as written.
NOTES_USAGE = parse.snippet("003#8").source


def check_notes_usage(device):
    """003's "通常用法", run as written (the names it leaves to the reader defined: a Linear as both
    `model` and `net`, two batches, MSE; its `opt.zero_grad()` for the `optimizer` it defines is a
    slip, repaired, whose erratum the notes' snippet check lists): with use_amp = False against the
    same loop without GradScaler or autocast ("否则等价于通常的训练方式"), and with use_amp = True,
    where the Linear's output dtype and the scaler's state say whether AMP was enabled."""

    def scope():
        torch.manual_seed(0)
        net = nn.Linear(8, 4).to(device)
        g = generator(device, 21)
        data = [torch.randn(16, 8, generator=g, device=device) for _ in range(2)]
        targets = [torch.randn(16, 4, generator=g, device=device) for _ in range(2)]
        return {
            "torch": torch,
            "net": net,
            "model": net,
            "data": data,
            "targets": targets,
            "loss_fn": F.mse_loss,
            "epochs": 2,
            "max_norm": 1.0,
        }

    def run(use_amp: bool):
        names, dtypes = scope(), []
        names["net"].register_forward_hook(lambda m, i, out: dtypes.append(out.dtype))
        source = NOTES_USAGE.replace("opt.zero_grad()", "optimizer.zero_grad()")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(source.replace("use_amp = True", f"use_amp = {use_amp}"), names)
        return names, dtypes

    disabled, _ = run(False)
    enabled, enabled_dtypes = run(True)
    plain = scope()
    optimizer = torch.optim.SGD(plain["net"].parameters(), lr=0.001)
    for _ in range(plain["epochs"]):
        for input, target in zip(plain["data"], plain["targets"]):
            F.mse_loss(plain["net"](input), target).backward()
            optimizer.step()
            optimizer.zero_grad()
    same = all(torch.equal(a, b) for a, b in zip(disabled["net"].parameters(), plain["net"].parameters()))
    return judge_notes_usage(
        same, str(enabled_dtypes[0]).removeprefix("torch."), enabled["scaler"].is_enabled(), device.type
    )


def judge_notes_usage(
    disabled_equals_plain: bool, enabled_dtype: str, scaler_enabled: bool, where: str
) -> Finding:
    """enabled=False: the loop must end on bit-identical parameters to the plain loop (fails
    otherwise). enabled=True must enable AMP: the Linear's output in float16 and the scaler on. The
    notes' `torch.cuda.amp` is CUDA's: on a CPU it casts nothing and the scaler disables itself, so
    there the True half is not measured (needs CUDA); on CUDA it fails where either is missing."""
    disabled = (
        "with use_amp = False the notes' loop ends on parameters "
        + ("bit-identical to" if disabled_equals_plain else "DIFFERENT from")
        + " the same loop without GradScaler and autocast"
    )
    enabled = (
        f"; with use_amp = True the Linear's output is {enabled_dtype} and the scaler is "
        f"{'enabled' if scaler_enabled else 'disabled'} ({where})"
    )
    if not disabled_equals_plain:
        return Finding(Verdict.FAILS, disabled + enabled)
    amp_on = enabled_dtype == "float16" and scaler_enabled
    if where != "cuda" and not amp_on:
        # The half the claim is about (enabled=True turns AMP on) is not observed here: not
        # measured, not `depends` (nothing about this machine makes the claim true or false).
        return Finding(
            Verdict.NOT_MEASURED,
            disabled + enabled + ": the True half needs CUDA (torch.cuda.amp casts nothing on a CPU), "
            "not measured here; the False half holds",
        )
    return Finding(
        Verdict.HOLDS if amp_on else Verdict.FAILS,
        disabled + enabled + ("" if amp_on else ": use_amp = True did NOT enable AMP"),
    )


def check_deprecated_spelling(device):
    """The notes' `torch.cuda.amp.autocast` / `torch.cuda.amp.GradScaler` spellings."""
    caught = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with torch.cuda.amp.autocast(enabled=False):
            pass
        torch.cuda.amp.GradScaler(enabled=False)
    caught = [str(w.message).splitlines()[0] for w in record if is_deprecation(w.category, str(w.message))]
    return judge_spellings(caught, torch.__version__)


def judge_spellings(warnings_seen: list[str], version: str) -> Finding:
    """torch.cuda.amp.autocast / GradScaler still work: a deprecated spelling is an erratum of the
    notes (as in every ID), not a verdict on AMP, which the other checks judge (no verdict here).
    Both spellings are introduced on one line of the notes: one erratum, both warnings its evidence."""
    errata = ()
    if warnings_seen:
        errata = (
            Erratum(
                ErratumKind.DEPRECATED_API,
                "`torch.cuda.amp.GradScaler`以及`torch.cuda.amp.autocast`",
                "; ".join(warnings_seen)
                + "; torch.amp.GradScaler('cuda') and torch.autocast('cuda') are current",
            ),
        )
    return Finding(
        None,
        f"torch {version}: the notes' torch.cuda.amp spellings run"
        + (f" with {len(warnings_seen)} deprecation warning(s)" if warnings_seen else ""),
        errata,
    )


def check_cpu_autocast_exists(device):
    """The notes: mixed precision "只能在gpu上进行". On the CPU: whether autocast casts a matmul to
    bf16 and fp16, and whether a mixed-precision training run (the transformer step, bf16 autocast,
    3 SGD steps) trains like the float64 truth within the bound the case holds it to."""
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    with torch.autocast("cpu", dtype=BF16):
        out_bf16 = a @ b
    with torch.autocast("cpu", dtype=FP16):
        out_fp16 = a @ b
    inputs = make_transformer({"width": 64, "batch": 8}, BF16, device, seed=0)
    losses, truth = amp_step(*inputs).double(), train_float64(*inputs)
    error = ((losses - truth).abs() / truth.abs()).max().item()
    return judge_cpu_autocast(
        out_bf16.dtype == BF16 and out_fp16.dtype == FP16, error, torch.amp.GradScaler("cpu").is_enabled()
    )


def judge_cpu_autocast(casts_on_cpu: bool, loss_error: float, scaler_on_cpu: bool) -> Finding:
    """The notes' "混合精度训练只能在gpu上进行": fails where the CPU runs mixed precision — autocast
    casts matmuls to the low dtypes and a bf16-autocast training run's losses stay within the
    case's bound of the float64 truth (3u_bf16: `CASE.tolerance`); holds where CPU autocast casts
    nothing; depends where it casts but the run misses the bound (the training, not the casting,
    is then in question)."""
    bound = 3 * U[BF16]
    trains = loss_error <= bound
    said = (
        f"CPU autocast {'casts matmuls to bfloat16 and float16' if casts_on_cpu else 'does NOT cast'}; a "
        f"bf16-autocast training run on the CPU: losses within {loss_error:.2g} relative of float64 "
        f"(bound 3u_bf16 = {bound:.2g}); GradScaler('cpu') {'enabled' if scaler_on_cpu else 'disabled'}"
    )
    if not casts_on_cpu:
        return Finding(Verdict.HOLDS, said)
    if not trains:
        return Finding(Verdict.DEPENDS, said + ": casts, but the run misses the bound")
    return Finding(Verdict.FAILS, said + ": mixed-precision training runs on the CPU")


def _larger_inputs(x, y, *params_and_step):
    # ×2⁶, exact in every dtype: activations ≈ 64 (far inside fp16's 65504), but the first loss is
    # ≈ 12.6 where the seeded ones are ≈ 2.8, and its gradients are as much larger.
    return (x * 2.0**6, y, *params_and_step)


INPUT_FAMILIES = {
    "larger_inputs": InputFamily(
        _larger_inputs,
        fails={
            "transformer.amp": "fp16: GradScaler's scaled gradients (2¹⁶ × those of a loss of 12.6) "
            "overflow fp16 on each of the 3 steps, so each step is skipped and the scale halved "
            "(its documented backoff): losses 12.58, 12.58, 12.58 against fp32's 12.58, 0.66, 0.00. "
            "bf16: the first step's large gradients, rounded to 8 bits, move the second loss by "
            "13% (0.750 against 0.663): the 3u bound assumes losses near ln 16, where drift is a "
            "fraction of u per step",
            "transformer.amp_notes": "the notes' float16 autocast with GradScaler, as transformer.amp's "
            "fp16: the scaled gradients of a loss of 12.6 overflow fp16 on each of the 3 steps, so each is "
            "skipped and the scale halved (GradScaler's documented backoff)",
        },
    ),
}


CASE = Case(
    id="precision.amp",
    tier=1,
    claim="Mixed-precision training with autocast + GradScaler (GPU only) trains like fp32; it is not "
    "necessarily faster or smaller; GradScaler scales the loss, unscale_ divides grads in place once per "
    "update.",
    source="003 自动混合精度训练",
    make_inputs=make_transformer,
    variants={
        # The notes' own objects (torch.cuda.amp: float16 autocast and GradScaler), on CUDA: their
        # losses against float64 decide "trains_like_fp32", their timing the hedge. Elsewhere they
        # are not run: torch.cuda.amp casts nothing on a CPU, so the claims are not measured there.
        "transformer.amp_notes": optimized(
            notes_amp_step, requires=("cuda",), dtypes=(FP16,), claim="trains_like_fp32"
        ),
        "convnet.amp_notes": optimized(
            notes_amp_step, inputs=make_convnet, requires=("cuda",), dtypes=(FP16,), claim="trains_like_fp32"
        ),
        # fp32 steps are the baseline; torch.autocast on this device, in bf16 and fp16 (the current
        # API, and CPU autocast, which the notes do not teach), is context.
        "transformer.fp32": naive(fp32_step),
        "transformer.amp": optimized(amp_step),
        "convnet.fp32": naive(fp32_step, inputs=make_convnet),
        "convnet.amp": optimized(amp_step, inputs=make_convnet),
    },
    oracle=train_float64,
    # Losses ≈ ln 16 ≈ 2.8 over 3 steps, never near zero: relative bounds. Autocast rounds GEMM
    # inputs to the low dtype (bf16 u = 2⁻⁸, fp16 u = 2⁻¹¹): a loss, a mean over the batch of
    # such outputs, is off by a fraction of u per step (measured ≤ 0.1u at the quick size);
    # 3u (bf16) and 4.5u (fp16) leave room for three steps' drift. A broken step (unscaled 2¹⁶
    # grads, a missed update) moves the later losses by O(1). The *.fp32 variants are held to the
    # same bounds on purpose: on CUDA their convolutions run in cuDNN's default TF32 (10-bit
    # mantissa, fp16's u), which these bounds admit.
    tolerance={BF16: Tol(rtol=3 * U[BF16]), FP16: Tol(rtol=4.5 * U[FP16])},
    input_families=INPUT_FAMILIES,
    dtypes={"cpu": (BF16, FP16), "cuda": (BF16, FP16)},
    sizes={
        # Two sizes at least: the hedge is judged at every size measured, and the report says where
        # a gain appears or vanishes.
        "quick": [{"width": 64, "batch": 8}, {"width": 128, "batch": 16}],
        "full": [{"width": w, "batch": 64} for w in (512, 1024, 2048, 4096)],
    },
    claims=(
        Claim(
            "trains_like_fp32",
            "平时使用一般只需要用`torch.cuda.amp.GradScaler`以及`torch.cuda.amp.autocast`即可",
            "003",
            ClaimKind.CORRECTNESS,
            reading="a training run with the notes' torch.cuda.amp.autocast (float16) and GradScaler gives "
            "the losses of the float64 run within float16's rounding; on CUDA only (not measured elsewhere)",
        ),
        Claim(
            "gpu_only",
            "混合精度训练只能在gpu上进行, 因为底层是使用Nvidia为自家gpu提供的`Float16`高效数值运算能力",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="mixed-precision training cannot run on a CPU: fails where CPU autocast casts to the low "
            "dtypes and a CPU mixed-precision run trains like float64",
        ),
        Claim(
            "enabled_flag",
            "并且可以设置`enabled`参数, 当它为`True`时, 则启用amp训练, 否则等价于通常的训练方式",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="the notes' loop with enabled=False ends on the plain loop's parameters bit for bit; "
            "with enabled=True its model runs in float16 and the scaler is on (CUDA: the notes' "
            "torch.cuda.amp)",
        ),
        Claim(
            "not_necessarily_faster",
            "实际体验上: amp训练计算速度与内存消耗未必快",
            "003",
            ClaimKind.HEDGE,
            reading="at some size measured, the notes' AMP step is not faster, or not lighter, than the fp32 "
            "step (CUDA: the notes' torch.cuda.amp)",
        ),
        Claim(
            "scale",
            "`scaler.scale(loss).backward()`可以简单地理解为: `(loss*scaler.get_scale()).backward()` … "
            "(所有参数共用一个倍数)",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="scale(loss) is loss·get_scale(), and every parameter's grad is scaled by that one "
            "factor",
        ),
        Claim(
            "step_unscales",
            "`scaler.step(optimizer)`可以简单理解为, 首先缩小每个参数的`grad`属性"
            "(原地修改, 并且实际上就是调用了`unscale_`方法), 之后调用`optimizer.step()` … "
            "print(x) # [0.9993, 1.9993]",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="step() divides .grad in place (as unscale_ does) before optimizer.step(); the notes' "
            "example (clip after unscale_) ends on x = [0.9993, 1.9993]",
        ),
        Claim(
            "state_machine",
            "`unscale_`函数会首先检查当前状态, 如果是`UNSCALED`或者`STEPPED`直接报错, "
            "因此每次调用`step`后必须使用`update`才能使用`unscale_`",
            "003",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "update_from_any_state",
            "update: READY/UNSCALED/STEPPED -> READY",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="update() called in any of the three states (nothing unscaled yet, unscaled, stepped) "
            "returns the optimizer's state to READY",
        ),
        Claim(
            "update",
            "`scaler.update()`: 大概是更新放缩比例",
            "003",
            ClaimKind.BEHAVIOUR,
            reading="update() changes the scale: after an inf grad (step skipped) it halves it",
        ),
    ),
    checks={
        "scale_multiplies": Check(check_scale_multiplies, claim="scale"),
        "unscale_in_place": Check(check_unscale_in_place, claim="step_unscales"),
        "double_unscale_raises": Check(check_double_unscale_raises, claim="state_machine"),
        "inf_skips_step": Check(check_inf_skips_step, claim="update"),
        "update_from_each_state": Check(check_update_from_each_state, claim="update_from_any_state"),
        "clip_after_unscale": Check(check_clip_after_unscale, claim="step_unscales"),
        "notes_usage": Check(check_notes_usage, claim="enabled_flag"),
        # Why fp16 needs the scaler: the notes do not say; context.
        "fp16_needs_scaler": Check(check_fp16_needs_scaler),
        # The spelling: an erratum, deciding nothing.
        "deprecated_spelling": Check(check_deprecated_spelling, devices=("cpu",)),
        "cpu_autocast_exists": Check(check_cpu_autocast_exists, devices=("cpu",), claim="gpu_only"),
    },
    # "amp训练计算速度与内存消耗未必快" is one hedge over time and memory: the notes' AMP does not
    # necessarily pay. A point (any size measured) where either gain is missing bears it out; the
    # notes' torch.cuda.amp runs on CUDA only, so elsewhere nothing is timed and it is not measured.
    verdict=AllOf(
        (
            AnyOf(
                (
                    NotFaster("transformer.amp_notes", "transformer.fp32"),
                    NotLighter("transformer.amp_notes", "transformer.fp32"),
                ),
                claim="not_necessarily_faster",
            ),
            FromFindings(),
        )
    ),
    x="width",
)
