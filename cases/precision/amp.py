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
from cases.spec import Case, Check, Erratum, ErratumKind, Finding, InputFamily, Tol, Verdict, naive, optimized
from harness.rules import AllOf, AnyOf, FromFindings, NotFaster, NotLighter

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


def train(x, y, *params_and_step, amp: bool = False, scaler_enabled: bool | None = None, forward=_forward):
    """k SGD steps from the given parameters; returns the k losses (fp32), each before its update.

    Per step: forward, backward (~2× forward flops), one read-modify-write of every parameter.
    Under autocast the GEMMs/convs run in the low dtype and their outputs (the saved activations)
    are half the bytes; parameters and gradients stay fp32 ("master weights").
    """
    *params, step = params_and_step
    device = x.device
    ps = [p.detach().clone().requires_grad_(True) for p in params]
    opt = torch.optim.SGD(ps, lr=step.lr)
    use_scaler = amp and step.amp_dtype == FP16 if scaler_enabled is None else scaler_enabled
    scaler = torch.amp.GradScaler(device.type, enabled=use_scaler)
    losses = []
    for _ in range(step.steps):
        with torch.autocast(device.type, dtype=step.amp_dtype if amp else FP32, enabled=amp):
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


fp32_step.__compile__ = _compile_the_model  # harness.compiled.Compiled uses it


def amp_step(*inputs):
    return train(*inputs, amp=True)


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
    x, z, opt, scaler = _notes_example(device)
    y = x.sum() + z.sum()
    scaled = scaler.scale(y)
    assert scaler.get_scale() == 2.0**16, f"initial scale {scaler.get_scale()}, expected 2**16"
    assert scaled.item() == y.item() * scaler.get_scale(), "scale(loss) is not loss * get_scale()"
    scaled.backward()
    assert torch.equal(x.grad, torch.full_like(x, 2.0**16)), f"grads {x.grad.tolist()} not 65536"
    return Finding(
        Verdict.HOLDS,
        f"scale(loss) = loss·get_scale(), initial scale {scaler.get_scale():.0f} = 2**16, grads "
        f"{x.grad.tolist()} (the notes' comment prints the scale after unscale_ as 65535: it is 65536)",
    )


def check_unscale_in_place(device):
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    grad, ptr = x.grad, x.grad.data_ptr()
    scaler.unscale_(opt)
    assert x.grad is grad and x.grad.data_ptr() == ptr, "unscale_ replaced the grad tensor"
    assert torch.equal(x.grad, torch.ones_like(x)), f"unscaled grads {x.grad.tolist()} not 1"
    assert scaler.get_scale() == 2.0**16, "unscale_ must not change the scale"
    return Finding(Verdict.HOLDS, f"unscale_ divides .grad in place (same storage): {x.grad.tolist()}")


def check_double_unscale_raises(device):
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    scaler.unscale_(opt)
    try:
        scaler.unscale_(opt)
        message = None
    except RuntimeError as exc:
        message = str(exc)
    assert message is not None, "a second unscale_ before update() did not raise"
    scaler.step(opt)  # READY → UNSCALED → STEPPED; step does not unscale twice
    try:
        scaler.unscale_(opt)
        after_step = None
    except RuntimeError as exc:
        after_step = str(exc)
    assert after_step is not None, "unscale_ after step() and before update() did not raise"
    scaler.update()
    scaler.scale(x.sum()).backward()
    scaler.unscale_(opt)  # update() → READY again
    return Finding(
        Verdict.HOLDS, f"second unscale_ raises RuntimeError: {message!r}; also after step(): {after_step!r}"
    )


def check_inf_skips_step(device):
    x, z, opt, scaler = _notes_example(device)
    scaler.scale(x.sum() + z.sum()).backward()
    x.grad[0] = float("inf")
    before = (x.detach().clone(), z.detach().clone())
    scaler.step(opt)
    scaler.update()
    assert torch.equal(x, before[0]) and torch.equal(z, before[1]), "step with an inf grad changed parameters"
    assert scaler.get_scale() == 2.0**15, f"scale after an inf step {scaler.get_scale()}, expected 2**15"
    opt.zero_grad()
    scaler.scale(x.sum() + z.sum()).backward()
    scaler.step(opt)
    assert not torch.equal(z, before[1]), "a finite step after the skipped one did not update"
    return Finding(
        Verdict.HOLDS,
        "an inf grad skips optimizer.step (parameters unchanged) and update() halves the scale to 32768",
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
    # coef = 1/(√2 + 1e-6) sits 1e-6/√2 = 7.1e-7 below 1/√2, and its sqrt, sum and quotient round
    # once each (3u = 1.8e-7): 8.9e-7 ≤ 1e-6 (the unscaled grads are exactly 1).
    assert all(math.isclose(g, 2**-0.5, rel_tol=1e-6) for g in clipped), (
        f"clipped grads {clipped}, expected 1/√2"
    )
    scaler.step(opt)
    expected = [1 - 1e-3 * 2**-0.5, 2 - 1e-3 * 2**-0.5]
    # x − lr·g rounds once to x's fp32 ulp (u relative) and lr·g once more (u of 7e-4): 2u relative,
    # 3e-4 of the 7.1e-4 step; the grad's 8.9e-7 above adds 0.01u.
    assert all(math.isclose(a, b, rel_tol=2 * U[FP32]) for a, b in zip(x.tolist(), expected)), (
        f"x after step {x.tolist()}"
    )

    wx, wz, wopt, wscaler = _notes_example(device)
    wscaler.scale(wx.sum() + wz.sum()).backward()
    torch.nn.utils.clip_grad_norm_(wx, 1.0)  # the scaled grads: norm 65536·√2 → clipped to 1
    wscaler.step(wopt)
    moved_wrong = (1 - wx[0]).item()
    # The right step is 7.1e-4, the scaled one 2¹⁶ times less, 1.1e-8 (below x = 1's half ulp, 3e-8:
    # x stays 1): a thousandth of the right step lies between the two.
    assert moved_wrong < 1e-3 * 2**-0.5 / 1000, f"clip before unscale_ moved x by {moved_wrong}"
    return Finding(
        Verdict.HOLDS,
        f"clip after unscale_: grads {[round(g, 4) for g in clipped]}, x → "
        f"{[round(v, 4) for v in x.tolist()]} (the notes: [0.7, 0.7], [0.9993, 1.9993]); clipping before "
        f"unscale_ moves x by {moved_wrong:.2g} instead of 7.1e-4",
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
    truth = 8 * 1e-4 * 1e-5
    # fp16 roundings of x and of dh = 2¹⁶·1e-5, the 8-term fp16 product with its rounding (≤ 9u₁₆): ≤ 11u₁₆
    # = 5.4e-3 (the unscale by 2⁻¹⁶ is exact); 1e-2 = 20u₁₆. Underflow gives 0, below truth/2.
    assert results[True] == results[True] and math.isclose(results[True], truth, rel_tol=1e-2), (
        f"scaled fp16 grad {results[True]:.3g}, expected {truth:.3g}"
    )
    assert results[False] < truth / 2, f"unscaled fp16 grad {results[False]:.3g} survived; expected underflow"
    return Finding(
        Verdict.HOLDS,
        f"a true grad of {truth:.1e}: without scaling {results[False]:.3g} after the fp16 backward, with "
        f"GradScaler {results[True]:.3g}",
    )


def check_deprecated_spelling(device):
    """The notes' `torch.cuda.amp.autocast` / `torch.cuda.amp.GradScaler` spellings."""
    caught = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with torch.cuda.amp.autocast(enabled=False):
            pass
        torch.cuda.amp.GradScaler(enabled=False)
    caught = [
        str(w.message).splitlines()[0]
        for w in record
        if issubclass(w.category, (FutureWarning, DeprecationWarning))
    ]
    return judge_spellings(caught, torch.__version__)


def judge_spellings(warnings_seen: list[str], version: str) -> Finding:
    """torch.cuda.amp.autocast / GradScaler still work: a deprecated spelling is an erratum of the
    notes (as in every ID), not a verdict on AMP, which the other checks judge (no verdict here)."""
    errata = tuple(
        Erratum(ErratumKind.DEPRECATED_API, "torch.cuda.amp.autocast / torch.cuda.amp.GradScaler", message)
        for message in warnings_seen
    )
    return Finding(
        None,
        f"torch {version}: the notes' torch.cuda.amp spellings run"
        + (
            f" with {len(errata)} deprecation warning(s); torch.amp is the current spelling" if errata else ""
        ),
        errata,
    )


def check_cpu_autocast_exists(device):
    """The notes: mixed precision "can only run on the GPU". CPU autocast runs matmuls in bf16."""
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    with torch.autocast("cpu", dtype=BF16):
        out_bf16 = a @ b
    with torch.autocast("cpu", dtype=FP16):
        out_fp16 = a @ b
    scaler = torch.amp.GradScaler("cpu")
    return judge_cpu_autocast(out_bf16.dtype == BF16 and out_fp16.dtype == FP16, scaler.is_enabled())


def judge_cpu_autocast(casts_on_cpu: bool, scaler_on_cpu: bool) -> Finding:
    """The notes say mixed precision "can only run on the GPU": a statement about torch, which is
    an erratum where CPU autocast works. The technique (AMP) is judged by the other checks."""
    errata = ()
    if casts_on_cpu and scaler_on_cpu:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "mixed precision can only run on the GPU",
                "torch.autocast('cpu') runs matmuls in bfloat16 and float16, and torch.amp.GradScaler('cpu') "
                "is enabled",
            ),
        )
    return Finding(
        None,
        f"CPU autocast {'works' if casts_on_cpu else 'does not cast'}; GradScaler('cpu') "
        f"{'enabled' if scaler_on_cpu else 'disabled'}",
        errata,
    )


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
        "quick": [{"width": 64, "batch": 8}],
        "full": [{"width": w, "batch": 64} for w in (512, 1024, 2048, 4096)],
    },
    checks={
        "scale_multiplies": Check(check_scale_multiplies),
        "unscale_in_place": Check(check_unscale_in_place),
        "double_unscale_raises": Check(check_double_unscale_raises),
        "inf_skips_step": Check(check_inf_skips_step),
        "clip_after_unscale": Check(check_clip_after_unscale),
        "fp16_needs_scaler": Check(check_fp16_needs_scaler),
        "deprecated_spelling": Check(check_deprecated_spelling, devices=("cpu",)),
        "cpu_autocast_exists": Check(check_cpu_autocast_exists, devices=("cpu",)),
    },
    # "amp训练计算速度与内存消耗未必快" is one hedge over time and memory: AMP does not
    # necessarily pay. A point where either gain is missing bears it out.
    verdict=AllOf(
        (
            AnyOf(
                (
                    NotFaster("transformer.amp", "transformer.fp32"),
                    NotLighter("transformer.amp", "transformer.fp32"),
                )
            ),
            FromFindings(),
        )
    ),
    x="width",
)
