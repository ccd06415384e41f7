"""conv.transposed: a transposed convolution built by hand as the notes' three steps, s−1
zeros inserted between input pixels, d(k−1)−p padding, the flipped kernel at stride 1, checked
against a float64 scatter loop and timed against `F.conv_transpose2d` (notes 004 "Transposed
Convolution", 001 "ConvTranspose2d"). The checks test the output-size formulas (001's and 004's
as written) and the padded size against real layers.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

from cases._lib.conv import DTYPES, INPUT_FAMILIES, TOLERANCE, conv_flops, scaled_randn
from cases._lib.inputs import generator
from cases._lib.precision import ieee_fp32
from cases.spec import Case, Check, Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict, library, naive
from harness.contract.rules import FromFindings


def make_transposed(size, dtype, device, seed):
    g = generator(device, seed)
    c, o, k = size["c"], size["o"], size["k"]
    x = scaled_randn((size["b"], c, size["h"], size["h"]), g, dtype, device)
    w = scaled_randn((c, o, k, k), g, dtype, device, scale=(c * k * k) ** -0.5)  # (C_in, C_out, k, k)
    b = scaled_randn((o,), g, dtype, device)
    return x, w, b, size["s"], size["p"], size["op"], size["d"]


def zero_insertion(x, w, b, stride, padding, output_padding, dilation):
    """The notes' three steps: s−1 zeros between pixels, d(k−1)−p zeros outside (negative: a crop),
    then the flipped, in/out-swapped kernel at stride 1. `output_padding` adds rows on one side only.

    Cost: the zero-inserted image has ≈ s² × the pixels, so ≈ (s²−1)/s² of the MACs multiply zeros.
    """
    bsz, c, h, wd = x.shape
    z = x.new_zeros(bsz, c, (h - 1) * stride + 1, (wd - 1) * stride + 1)
    z[:, :, ::stride, ::stride] = x
    pad = dilation * (w.shape[-1] - 1) - padding
    z = F.pad(z, (pad, pad + output_padding, pad, pad + output_padding))
    return F.conv2d(z, w.flip(-2, -1).transpose(0, 1), b, dilation=dilation)


def conv_transpose2d(x, w, b, stride, padding, output_padding, dilation):
    return F.conv_transpose2d(
        x, w, b, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation
    )


def transposed_float64(x, w, b, stride, padding, output_padding, dilation):
    """The definition (the adjoint of a strided convolution): input pixel (i, j) adds x·w[a, c] at
    output (i·s − p + a·d, j·s − p + c·d). Scattered tap by tap in float64, then cropped by p."""
    x64, w64 = x.double(), w.double()
    k, (bsz, _, h, wd) = w.shape[-1], x.shape
    full_h = (h - 1) * stride + dilation * (k - 1) + 1 + output_padding
    full_w = (wd - 1) * stride + dilation * (k - 1) + 1 + output_padding
    out = x64.new_zeros(bsz, w.shape[1], full_h, full_w)
    for a, c in itertools.product(range(k), repeat=2):
        r, q = a * dilation, c * dilation
        out[:, :, r : r + (h - 1) * stride + 1 : stride, q : q + (wd - 1) * stride + 1 : stride] += (
            torch.einsum("bihw,io->bohw", x64, w64[:, :, a, c])
        )
    out = out[:, :, padding : full_h - padding, padding : full_w - padding]
    return out + b.double().view(1, -1, 1, 1)


def _out_pixels(size) -> int:
    h_out = transposed_out(size["h"], size["k"], size["s"], size["p"], size["op"], size["d"])
    return h_out**2


def transposed_out(h, k, s, p, op, d):
    """PyTorch's documented H_out for ConvTranspose2d."""
    return (h - 1) * s - 2 * p + d * (k - 1) + op + 1


def check_transposed_output_size(device):
    """The right formula against ConvTranspose2d over a grid, and the notes' two versions:
    001 writes `padding[0]` where `output_padding[0]` belongs; 004 writes (n−1)s − 2p + k."""
    configs = notes_001_wrong = notes_004_wrong = notes_004_domain = layer_off = 0
    example = None
    for h, k, s, p, d in itertools.product((1, 2, 5), (1, 2, 3, 4), (1, 2, 3), (0, 1, 2), (1, 2)):
        for op in range(max(s, d)):  # output_padding must be < stride or < dilation
            want = transposed_out(h, k, s, p, op, d)
            if want <= 0:
                continue
            x = torch.ones(1, 1, h, h, device=device)
            y = F.conv_transpose2d(
                x, torch.ones(1, 1, k, k, device=device), stride=s, padding=p, output_padding=op, dilation=d
            )
            layer_off += y.shape[-1] != want
            configs += 1
            notes_001 = (h - 1) * s - 2 * p + d * (k - 1) + p + 1
            if notes_001 != want:
                notes_001_wrong += 1
                if example is None or (h, k, s, p, op, d) == (5, 3, 2, 1, 0, 1):  # a common 2× upsampler
                    example = f"h={h} k={k} s={s} p={p} op={op} d={d}: layer {want}, notes {notes_001}"
            if op == 0 and d == 1:
                notes_004_domain += 1
                notes_004_wrong += (h - 1) * s - 2 * p + k != want
    return judge_transposed_output_size(
        configs, notes_001_wrong, example, notes_004_domain, notes_004_wrong, layer_off=layer_off
    )


def judge_transposed_output_size(
    configs, notes_001_wrong, example, notes_004_domain, notes_004_wrong, *, layer_off: int = 0
) -> Finding:
    """The technique: the output size of a transposed conv: the layer against the documented
    formula (`layer_off`: configs where it differed) and the notes' 004 form (n−1)s−2p+k where it
    applies. 001's formula with +padding[0] in place of +output_padding is a wrong formula, an
    erratum."""
    errata = ()
    if notes_001_wrong:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "H_out = (H_in−1)·stride[0] − 2·padding[0] + dilation[0]·(kernel_size[0]−1) + padding[0] + 1",
                f"+padding[0] where output_padding belongs: wrong in {notes_001_wrong}/{configs} configs "
                f"(e.g. {example})",
            ),
        )
    return Finding(
        Verdict.HOLDS if configs and notes_004_wrong == 0 and layer_off == 0 else Verdict.FAILS,
        f"H_out=(H−1)s−2p+d(k−1)+output_padding+1 matches ConvTranspose2d in {configs - layer_off} of "
        f"{configs} configs; 004's "
        f"(n−1)s−2p+k holds in {notes_004_domain - notes_004_wrong} of {notes_004_domain} configs with "
        "output_padding=0, dilation=1",
        errata,
    )


def check_padded_size(device):
    """The notes' intermediate size n + (n−1)(s−1) + 2(k−1−p) of the zero-inserted, padded image,
    and that a stride-1, padding-0 conv of it then has (n−1)s − 2p + k outputs."""
    checked, off = 0, []
    for n, k, s, p in itertools.product((1, 3, 6), (1, 2, 3, 5), (1, 2, 3), (0, 1, 2)):
        if (n - 1) * s + 1 + 2 * (k - 1 - p) < k:
            continue  # more padding than the kernel span: no output at all
        z = torch.ones(1, 1, (n - 1) * s + 1, (n - 1) * s + 1, device=device)
        z = F.pad(z, (k - 1 - p,) * 4)
        padded = z.shape[-1]
        out = F.conv2d(z, torch.ones(1, 1, k, k, device=device)).shape[-1]
        notes_padded, notes_out = n + (n - 1) * (s - 1) + 2 * (k - 1 - p), (n - 1) * s - 2 * p + k
        if (padded, out) != (notes_padded, notes_out):
            off.append((n, k, s, p, padded, notes_padded, out, notes_out))
        checked += 1
    return judge_padded_size(checked, off)


def judge_padded_size(checked: int, off: list[tuple]) -> Finding:
    """The notes' intermediate size n+(n−1)(s−1)+2(k−1−p) (s−1 zeros inside, k−1−p outside) and
    the stride-1 conv's (n−1)s−2p+k against the sizes the zero insertion and F.conv2d give. `off`:
    (n, k, s, p, padded, the notes' padded, outputs, the notes' outputs) where either differs."""
    held = checked > 0 and not off
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"padded size n+(n−1)(s−1)+2(k−1−p) and final (n−1)s−2p+k against the padded image and "
        f"F.conv2d: off in {len(off)} of {checked} configs"
        + (f" (n, k, s, p, padded, notes, out, notes): {off[:3]}" if off else ""),
    )


NOTES_TRANSPOSED_LAYER = "ConvTransposed"


def check_notes_layer_name(device):
    """004 writes `nn.ConvTransposed(channel_in,channel_out,kernel_size,stride,padding,bias)`: the
    layer's name as torch.nn spells it, and where the notes' positional arguments land."""
    import inspect

    params = list(inspect.signature(nn.ConvTranspose2d.__init__).parameters)[1:]
    notes = ["channel_in", "channel_out", "kernel_size", "stride", "padding", "bias"]
    return judge_notes_layer_name(hasattr(nn, NOTES_TRANSPOSED_LAYER), params[: len(notes)], notes)


def judge_notes_layer_name(exists: bool, positional: list[str], notes: list[str]) -> Finding:
    """The notes' spelling of the transposed-conv layer (context: the technique is judged by the
    variants and the size checks): a name torch.nn does not have is a typo; the 6th positional
    argument that is not `bias` is a wrong statement of the signature."""
    errata = ()
    if not exists:
        errata += (
            Erratum(
                ErratumKind.TYPO,
                "nn.ConvTransposed(channel_in,channel_out,kernel_size,stride,padding,bias)",
                f"torch.nn has no {NOTES_TRANSPOSED_LAYER} (AttributeError); the layer is nn.ConvTranspose2d",
            ),
        )
    if positional[-1:] != notes[-1:]:
        errata += (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "nn.ConvTransposed(channel_in,channel_out,kernel_size,stride,padding,bias)",
                f"ConvTranspose2d's positional parameters are {positional}: the 6th is "
                f"{positional[-1] if positional else '?'}, so a bias passed 6th sets output_padding",
            ),
        )
    return Finding(
        None,
        f"nn.{NOTES_TRANSPOSED_LAYER} {'exists' if exists else 'does not exist'}; ConvTranspose2d's "
        f"first {len(positional)} parameters: {positional}",
        errata,
    )


TRANSPOSED = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.transposed",
    tier=2,
    claim="A transposed convolution equals zero insertion (s−1 inside), padding k−p−1 outside, a flipped "
    "kernel and a stride-1 convolution; H_out = (H_in−1)·stride − 2·padding + dilation·(k−1) + padding + 1 "
    "(001).",
    source="004 Transposed Convolution; 001 nn.ConvTranspose2d",
    make_inputs=make_transposed,
    variants={
        "zero_insertion": naive(
            ieee_fp32(zero_insertion),
            claim="zero_insertion",
            peak_bytes=lambda s, b: 3 * s["b"] * max(s["c"], s["o"]) * (s["h"] * s["s"]) ** 2 * b,
            # The stride-1 conv it runs: k² taps at every output pixel, zeros included (≈ s² × the
            # transposed conv's own MACs).
            flops=lambda s: 2 * s["b"] * s["o"] * s["c"] * s["k"] ** 2 * _out_pixels(s),
        ),
        "conv_transpose2d": library(
            ieee_fp32(conv_transpose2d),
            peak_bytes=lambda s, b: 2 * s["b"] * s["o"] * (s["h"] * s["s"]) ** 2 * b,
        ),
    },
    oracle=transposed_float64,
    tolerance=TOLERANCE,
    dtypes=DTYPES,
    input_families=INPUT_FAMILIES,
    sizes={
        "quick": [
            {"h": h, "b": 4, "c": 16, "o": 16, "k": 4, "s": 2, "p": 1, "op": 1, "d": 1} for h in (8, 16, 32)
        ],
        "full": [
            {"h": h, "b": 32, "c": 64, "o": 64, "k": 4, "s": 2, "p": 1, "op": 1, "d": 1}
            for h in (32, 64, 128, 256)
        ],
    },
    claims=(
        Claim(
            "zero_insertion",
            "仍然是一种卷积操作，只不过需要经历三个步骤：矩阵填充(内部相邻元素填充s-1个0，外部填充k-p-1个0)、"
            "kernel颠倒、按照kernel,s=1,p=0进行卷积操作",
            "004",
            ClaimKind.CORRECTNESS,
        ),
        Claim("padded_size", "矩阵填充后形状为：n + (n-1)(s-1) +2*(k-1-p)", "004", ClaimKind.BEHAVIOUR),
        Claim("output_size", "最终形状为(n-1)*s -2p +k", "004", ClaimKind.BEHAVIOUR),
    ),
    checks={
        "output_size_formula": Check(check_transposed_output_size, claim="output_size"),
        "padded_size": Check(check_padded_size, claim="padded_size"),
        "notes_layer_name": Check(check_notes_layer_name, devices=("cpu",)),
    },
    # The notes teach the equivalence, not a speed-up of either way: the timings are context.
    verdict=FromFindings(),
    flops=conv_flops,
    x="h",
)
