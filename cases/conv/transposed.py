"""conv.transposed: a transposed convolution built by hand as the notes' three steps, s−1
zeros inserted between input pixels, d(k−1)−p padding, the flipped kernel at stride 1, checked
against a float64 scatter loop and timed against `F.conv_transpose2d` (notes 004 "Transposed
Convolution", 001 "ConvTranspose2d"). The checks test the output-size formulas (001's and 004's,
each as written), the padded size and the notes' argument order against real layers.
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


def _output_size_grid(device):
    """(h, k, s, p, op, d, the layer's H_out) over a grid of ConvTranspose2d configurations."""
    rows = []
    for h, k, s, p, d in itertools.product((1, 2, 5), (1, 2, 3, 4), (1, 2, 3), (0, 1, 2), (1, 2)):
        for op in range(max(s, d)):  # output_padding must be < stride or < dilation
            if transposed_out(h, k, s, p, op, d) <= 0:
                continue
            x = torch.ones(1, 1, h, h, device=device)
            y = F.conv_transpose2d(
                x, torch.ones(1, 1, k, k, device=device), stride=s, padding=p, output_padding=op, dilation=d
            )
            rows.append((h, k, s, p, op, d, y.shape[-1]))
    return rows


def notes_001_out(h, k, s, p, op, d):
    """001 as written: (H_in−1)·stride − 2·padding + dilation[0]·(kernel[0]−1) + padding[0] + 1."""
    return (h - 1) * s - 2 * p + d * (k - 1) + p + 1


def check_transposed_output_size(device):
    """004's (n−1)s − 2p + k against ConvTranspose2d where it speaks (output_padding 0, dilation
    1), and the documented formula against the layer everywhere (the reference the check relies on)."""
    rows = _output_size_grid(device)
    layer_off = sum(out != transposed_out(*r) for *r, out in rows)
    domain = [(h, k, s, p, out) for h, k, s, p, op, d, out in rows if op == 0 and d == 1]
    notes_004_wrong = sum(out != (h - 1) * s - 2 * p + k for h, k, s, p, out in domain)
    return judge_transposed_output_size(len(rows), len(domain), notes_004_wrong, layer_off=layer_off)


def judge_transposed_output_size(
    configs, notes_004_domain, notes_004_wrong, *, layer_off: int = 0
) -> Finding:
    """004's (n−1)s−2p+k against the layer over the configurations it speaks of (output_padding 0,
    dilation 1); `layer_off`: configurations where the layer left the documented formula (the
    reference itself broken: fails, the grid proves nothing)."""
    held = notes_004_domain > 0 and notes_004_wrong == 0 and layer_off == 0
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"004's (n−1)s−2p+k against ConvTranspose2d: off in {notes_004_wrong} of {notes_004_domain} configs "
        f"with output_padding=0, dilation=1; the documented H_out=(H−1)s−2p+d(k−1)+output_padding+1 off in "
        f"{layer_off} of {configs} configs",
    )


def check_001_output_size(device):
    """001's H_out as written (+ padding[0] as its last term) against the layer; and the same formula
    with output_padding[0] there (torch's documented one), to say whether the corrected form works."""
    rows = _output_size_grid(device)
    wrong = [(h, k, s, p, op, d, out, notes_001_out(h, k, s, p, op, d)) for h, k, s, p, op, d, out in rows]
    wrong = [w for w in wrong if w[-2] != w[-1]]
    corrected_off = sum(out != transposed_out(*r) for *r, out in rows)
    return judge_001_output_size(len(rows), wrong, corrected_off)


def judge_001_output_size(configs: int, wrong: list[tuple], corrected_off: int) -> Finding:
    """001's formula against ConvTranspose2d (`wrong`: (h, k, s, p, op, d, layer, the notes'), where
    they differ); fails where any configuration differs. `corrected_off`: configurations where the
    formula with output_padding[0] in place of its last padding[0] misses the layer."""
    common = next((w for w in wrong if w[:6] == (5, 3, 2, 1, 0, 1)), wrong[0] if wrong else None)
    example = (
        f" (e.g. h={common[0]} k={common[1]} s={common[2]} p={common[3]} output_padding={common[4]} "
        f"d={common[5]}: the layer gives {common[6]}, the notes' formula {common[7]})"
        if common
        else ""
    )
    return Finding(
        Verdict.FAILS if wrong or not configs else Verdict.HOLDS,
        f"001's H_out (… + padding[0] + 1) against ConvTranspose2d: off in {len(wrong)} of {configs} "
        f"configs{example}; right wherever padding = output_padding only. With output_padding[0] as the "
        f"last term (torch's documented formula) it is off in {corrected_off} of {configs}: use that",
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
    """004 writes `nn.ConvTransposed(...)`: whether torch.nn has the name."""
    return judge_notes_layer_name(hasattr(nn, NOTES_TRANSPOSED_LAYER))


def judge_notes_layer_name(exists: bool) -> Finding:
    """The notes' spelling of the transposed-conv layer (context: the technique is judged by the
    variants and the size checks): a name torch.nn does not have is a typo."""
    errata = ()
    if not exists:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "nn.ConvTransposed(channel_in,channel_out,kernel_size,stride,padding,bias)",
                f"torch.nn has no {NOTES_TRANSPOSED_LAYER} (AttributeError); the layer is nn.ConvTranspose2d",
            ),
        )
    return Finding(None, f"nn.{NOTES_TRANSPOSED_LAYER} {'exists' if exists else 'does not exist'}", errata)


def check_layer_signature(device):
    """004's argument list (…, padding, bias): the layer built with those six arguments in that
    order, bias=False sixth, and where the False lands."""
    import inspect

    params = list(inspect.signature(nn.ConvTranspose2d.__init__).parameters)[1:7]
    layer = nn.ConvTranspose2d(2, 3, 3, 2, 1, False, device=device)
    return judge_layer_signature(params, layer.bias is not None, tuple(layer.output_padding))


def judge_layer_signature(positional: list[str], bias_kept: bool, output_padding: tuple) -> Finding:
    """The notes list bias sixth. Holds when the layer's sixth positional parameter is `bias` and a
    False passed there removes the bias; fails where it lands elsewhere (`bias_kept`: the layer
    still has a bias after bias=False sixth)."""
    held = positional[5:6] == ["bias"] and not bias_kept
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"ConvTranspose2d's first six parameters: {positional}; ConvTranspose2d(2, 3, 3, 2, 1, False) "
        + ("has no bias" if not bias_kept else f"still has a bias, output_padding={output_padding}")
        + ("" if held else ": the sixth is output_padding; pass bias=False by keyword"),
    )


TRANSPOSED = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.transposed",
    # Timed side by side, deciding no claim (the verdict comes from the findings): the
    # library's or the catalogue's better way against the notes'.
    context_pairs=(("conv_transpose2d", "zero_insertion"),),
    tier=2,
    claim="A transposed convolution equals zero insertion (s−1 inside), padding k−p−1 outside, a flipped "
    "kernel and a stride-1 convolution; its output is (n−1)s−2p+k (004) and, in 001, "
    "(H_in−1)·stride − 2·padding + dilation·(k−1) + padding + 1; bias is its sixth argument.",
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
        Claim(
            "output_size_001",
            "H_{out} = (H_{in} - 1)*stride - 2*padding + dilation[0]*(kernel[0] - 1) + padding[0] + 1",
            "001",
            ClaimKind.BEHAVIOUR,
            # The notes nowhere write output_padding: the formula is judged as it stands.
            reading="ConvTranspose2d's H_out is (H_in−1)·stride − 2·padding + dilation·(k−1) + padding + 1",
        ),
        Claim(
            "layer_signature",
            "nn.ConvTransposed(channel_in,channel_out,kernel_size,stride,padding,bias)",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the transposed-conv layer's positional arguments are (in, out, kernel_size, stride, "
            "padding, bias): a sixth positional argument sets bias",
        ),
    ),
    checks={
        "output_size_formula": Check(check_transposed_output_size, claim="output_size"),
        "padded_size": Check(check_padded_size, claim="padded_size"),
        "output_size_001": Check(check_001_output_size, claim="output_size_001"),
        "notes_layer_name": Check(check_notes_layer_name, devices=("cpu",)),
        "layer_signature": Check(check_layer_signature, devices=("cpu",), claim="layer_signature"),
    },
    # The notes teach the equivalence, not a speed-up of either way: the timings are context.
    verdict=FromFindings(),
    flops=conv_flops,
    x="h",
)
