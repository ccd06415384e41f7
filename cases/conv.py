"""Convolution built by hand vs the library kernels (notes 001 "nn.Unfold", "ConvTranspose2d";
004 "卷积", "Transposed Convolution", "Dilated Convolution").

Three hand-built forms, each checked against a float64 brute-force loop over kernel taps (the
definition, sharing no code with either variant) and timed against the library call:

* im2col: `F.unfold` copies every k×k patch into a column (k² × the input), then one GEMM;
* transposed convolution: insert s−1 zeros between input pixels, pad d(k−1)−p, flip the kernel,
  run a stride-1 convolution (the notes' three steps);
* dilated convolution: a kernel with d−1 zeros between taps, run as an ordinary convolution.

The checks test the notes' shape arithmetic against real layers: Unfold's (2,5,3,4)→(2,30,4),
the transposed-conv output-size formulas, and the receptive-field recursion against the measured
extent of non-zero input gradients.

`conv.shapes` (the second part of this module): the output-size formula, `padding='same'`, weight
shapes, VGG-16, equivariance (notes 004 "计算卷积", "二维卷积细节", "VGG", "equivariance"). Shapes
are traced on the ``meta`` device where possible: a VGG-16 forward at 224×224 costs ~15.5 GFLOP on
real tensors and nothing on meta ones, and the shapes are the same.
"""

from __future__ import annotations

import itertools
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from cases._lib.inputs import generator, strided
from cases._lib.precision import ieee_fp32
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
    library,
    naive,
    optimized,
)
from harness import measure
from harness.contract.rules import AllOf, Faster, FromFindings

FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16

# A conv output is a sum of K = C·k² products, O(1) values (K ≤ 64·4² = 1024 over the sizes
# below). The GEMM and the direct kernels sum in different orders: an error of ~u·√K of the terms'
# size, which lands on outputs near zero as on large ones, hence a floor at the output's scale,
# 2u·√K, and 8× that for fp32, where cuDNN may pick a Winograd/FFT algorithm (a few more roundings
# of transformed operands). fp32 variants run with TF32 off (cases/_lib/precision.py), so fp32 is held
# to an fp32 bound. bf16/fp16: the output is rounded to the dtype (u, relative) after fp32
# accumulation; 4u at the output's scale for the rounded intermediates (the zero-inserted input).
TOLERANCE = {
    FP32: lambda s: Tol(rtol=8 * U[FP32], floor=8 * U[FP32] * (s["c"] * s["k"] ** 2) ** 0.5),
    BF16: Tol(rtol=2 * U[BF16], floor=4 * U[BF16]),
    FP16: Tol(rtol=2 * U[FP16], floor=4 * U[FP16]),
}
DTYPES = {"cpu": (FP32,), "cuda": (FP32, BF16, FP16)}


def _input_as(layout):
    """A family whose image (the first input) is stored otherwise, the rest as drawn."""

    def transform(x, *rest):
        return (layout(x), *rest)

    return transform


# The hand-built forms and the library kernels on inputs other than NCHW-contiguous: a
# channels_last image (oneDNN and cuDNN take another path), one in no format (every second
# element of a buffer), and a batch of one image (a size-1 batch dimension).
INPUT_FAMILIES = {
    "channels_last_input": InputFamily(_input_as(lambda x: x.contiguous(memory_format=torch.channels_last))),
    "strided_input": InputFamily(_input_as(strided)),
    "batch_of_one": InputFamily(resize=lambda s: {**s, "b": 1}),
}


def _randn(shape, g, dtype, device, scale=1.0):
    return (scale * torch.randn(shape, generator=g, dtype=torch.float32, device=device)).to(dtype)


def _conv_params(size, dtype, device, g):
    c, o, k = size["c"], size["o"], size["k"]
    x = _randn((size["b"], c, size["h"], size["h"]), g, dtype, device)
    w = _randn((o, c, k, k), g, dtype, device, scale=(c * k * k) ** -0.5)
    b = _randn((o,), g, dtype, device)
    return x, w, b


def _taps(h_in, k, stride, pad, dil):
    """Output length of a convolution along one axis: the standard formula."""
    return (h_in + 2 * pad - dil * (k - 1) - 1) // stride + 1


def conv_flops(s) -> int:
    """A k×k convolution's useful work: 2·b·o·c·k² flops per input-resolution pixel (h², the size
    each case's variants agree on; a variant doing more declares its own)."""
    return 2 * s["b"] * s["o"] * s["c"] * s["k"] ** 2 * s["h"] ** 2


def conv_float64(x, w, b, stride=1, padding=0, dilation=1):
    """The truth for a convolution: Σ over the k² taps of a shifted, strided input slice times one
    (O, C) slice of the weight, in float64. A loop over taps, not a patch matrix and not a kernel."""
    x64, w64, b64 = x.double(), w.double(), b.double()
    k = w.shape[-1]
    ho = _taps(x.shape[-2], k, stride, padding, dilation)
    wo = _taps(x.shape[-1], k, stride, padding, dilation)
    xp = F.pad(x64, (padding,) * 4)
    out = b64.view(1, -1, 1, 1).expand(x.shape[0], -1, ho, wo).clone()
    for i, j in itertools.product(range(k), repeat=2):
        r, c = i * dilation, j * dilation
        patch = xp[:, :, r : r + stride * (ho - 1) + 1 : stride, c : c + stride * (wo - 1) + 1 : stride]
        out += torch.einsum("bchw,oc->bohw", patch, w64[:, :, i, j])
    return out


# ---- conv.im2col ------------------------------------------------------------------------------


def make_im2col(size, dtype, device, seed):
    g = generator(device, seed)
    return _conv_params(size, dtype, device, g)


def im2col(x, w, b):
    # unfold writes B·C·k²·L elements (k² = 9 copies of every input pixel for a 3×3 kernel), the
    # GEMM reads them once: 2·B·O·C·k²·L flops, the same as the direct convolution.
    cols = F.unfold(x, w.shape[-1], padding=1)  # (B, C·k², L)
    out = torch.matmul(w.flatten(1), cols)  # (B, O, L)
    return out.add_(b[:, None]).view(x.shape[0], w.shape[0], x.shape[-2], x.shape[-1])


def conv2d(x, w, b):
    return F.conv2d(x, w, b, padding=1)


def im2col_float64(x, w, b):
    return conv_float64(x, w, b, padding=1)


def check_unfold_shape(device):
    """The notes' example: Unfold(kernel_size=(2,3)) on (2,5,3,4) gives (2,30,4), and in general
    (B, C·∏k, ∏ L_i) with L_i from the conv output formula."""
    x = torch.randn(2, 5, 3, 4, device=device)
    got = tuple(torch.nn.Unfold(kernel_size=(2, 3))(x).shape)
    off, configs = [], 0
    for (kh, kw), s, p, d in itertools.product([(2, 3), (3, 3), (1, 4)], (1, 2), (0, 1), (1, 2)):
        y = F.unfold(x.new_ones(1, 3, 9, 8), (kh, kw), dilation=d, padding=p, stride=s)
        want = (1, 3 * kh * kw, _taps(9, kh, s, p, d) * _taps(8, kw, s, p, d))
        if tuple(y.shape) != want:
            off.append(((kh, kw), s, p, d, tuple(y.shape), want))
        configs += 1
    return judge_unfold_shape(got, (2, 30, 4), off, configs)


def judge_unfold_shape(got: tuple, notes: tuple, off: list, configs: int) -> Finding:
    """The technique: Unfold gives (B, C·kh·kw, L) with L from the conv output formula (`off`: the
    configurations where it did not). The notes' (2,30,4) is their number: an erratum if it is not
    what the layer gives."""
    errata = ()
    if got != notes:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "output = unfold(input) # 2*30*4",
                f"Unfold(kernel_size=(2,3)) on (2,5,3,4) gives {got}",
            ),
        )
    return Finding(
        Verdict.HOLDS if not off and configs else Verdict.FAILS,
        f"(2,5,3,4) → {got} (the notes: {notes}); (B, C·kh·kw, L) off in {len(off)} of {configs} more "
        f"configs {off[:2]}",
        errata,
    )


def im2col_any(x, w, b, stride, padding, dilation):
    """Unfold + one matmul for any stride, padding and dilation."""
    k = w.shape[-1]
    cols = F.unfold(x, k, dilation=dilation, padding=padding, stride=stride)
    ho = _taps(x.shape[-2], k, stride, padding, dilation)
    wo = _taps(x.shape[-1], k, stride, padding, dilation)
    return (w.flatten(1) @ cols + b[:, None]).view(x.shape[0], w.shape[0], ho, wo)


@ieee_fp32
def check_im2col_equals_conv(device):
    """The technique: a convolution is a matrix product over unfolded patches. im2col and F.conv2d,
    each against the float64 tap loop, elementwise within the rigorous bound of a K-term fp32 sum in
    any order: |ŷ − y| ≤ γ_K·(|W|·|cols| + |b|), γ_K = K·u/(1 − K·u), K = C·k² + 1."""
    g = torch.Generator().manual_seed(5)
    ratios = []
    for k, stride, padding, dilation in ((3, 1, 1, 1), (3, 2, 1, 1), (3, 1, 2, 2), (5, 1, 0, 1)):
        x = torch.randn(2, 8, 17, 17, generator=g).to(device)
        w = (torch.randn(16, 8, k, k, generator=g) / (8 * k * k) ** 0.5).to(device)
        b = torch.randn(16, generator=g).to(device)
        truth = conv_float64(x.cpu(), w.cpu(), b.cpu(), stride, padding, dilation)
        kk = w[0].numel() + 1
        gamma = kk * U[FP32] / (1 - kk * U[FP32])
        mags = im2col_any(
            x.cpu().double().abs(), w.cpu().double().abs(), b.cpu().double().abs(), stride, padding, dilation
        )
        bound = gamma * mags
        got = {
            "im2col": im2col_any(x, w, b, stride, padding, dilation),
            "conv2d": F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation),
        }
        worst = {n: ((y.cpu().double() - truth).abs() / bound).max().item() for n, y in got.items()}
        ratios.append((f"k={k} s={stride} p={padding} d={dilation}", worst["im2col"], worst["conv2d"]))
    return judge_im2col_equals_conv(ratios)


def judge_im2col_equals_conv(ratios: list[tuple[str, float, float]]) -> Finding:
    """(config, im2col's largest error ÷ bound, conv2d's): holds where im2col stays within it (≤ 1)
    everywhere. conv2d's is context: the library's own accuracy (cuDNN's Winograd/FFT algorithms
    round transformed operands and are held to a looser bound by the timed variants)."""
    held = bool(ratios) and all(a <= 1 for _, a, _ in ratios)
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        "W·unfold(x) + b and F.conv2d against the float64 tap loop, largest error as a fraction of the "
        "fp32 bound γ_K·(|W|·|cols| + |b|): "
        + "; ".join(f"{n}: im2col {a:.2g}, conv2d {c:.2g}" for n, a, c in ratios),
    )


def check_conv_is_a_matrix_product(device):
    """The notes: PyTorch convolves by building a (sparse) matrix and multiplying, not by sliding a
    window. The matrix product is exact (the variants show it); whether the library kernel actually
    builds the patch matrix is visible in its peak memory: an explicit im2col needs B·C·k²·L
    elements at once, a Toeplitz (sparse-as-dense) matrix C·H·W × O·L."""
    size = {"h": 64, "b": 4, "c": 16, "o": 32, "k": 3}
    x, w, b = make_im2col(size, FP32, device, seed=4)
    out, conv_peak = measure.peak_memory(lambda: ieee_fp32(conv2d)(x, w, b), device)
    _, im2col_peak = measure.peak_memory(lambda: ieee_fp32(im2col)(x, w, b), device)
    itemsize = 4
    cols = size["b"] * size["c"] * size["k"] ** 2 * size["h"] ** 2 * itemsize
    toeplitz = size["c"] * size["h"] ** 2 * size["o"] * size["h"] ** 2 * itemsize
    output = out.numel() * itemsize
    assert im2col_peak >= cols, f"im2col peaked at {im2col_peak} B, below its own patch matrix ({cols} B)"

    def mib(n):
        return f"{n / 2**20:.2f} MiB"

    evidence = (
        f"{device.type}: F.conv2d peaked at {mib(conv_peak)} (output {mib(output)}); an explicit patch "
        f"matrix needs {mib(cols)}, the hand-built im2col peaked at {mib(im2col_peak)}; a dense Toeplitz "
        f"matrix would need {mib(toeplitz)}"
    )
    return judge_conv_is_a_matrix_product(conv_peak >= cols, evidence)


def judge_conv_is_a_matrix_product(builds_matrix: bool, evidence: str) -> Finding:
    """The technique: a convolution is a matrix product over unfolded patches (the variants held
    conv2d and im2col equal to float64). How the library's kernel computes it is the notes'
    statement: where its peak memory is below one patch matrix, it never built the matrix the
    notes say it builds, a wrong statement, an erratum."""
    if builds_matrix:
        return Finding(None, evidence + ": consistent with an explicit im2col + GEMM")
    return Finding(
        None,
        evidence + ": the library kernel never holds the patch matrix",
        (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "卷积在pytorch中实现是通过构造稀疏矩阵进行矩阵乘法实现卷积操作而不是滑动窗口的方式",
                "F.conv2d peaks below one patch matrix (direct, tiled or implicit GEMM): " + evidence,
            ),
        ),
    )


IM2COL = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.im2col",
    tier=2,
    claim="A convolution is Unfold (im2col) + one matmul, equal to F.conv2d; Unfold((2,3)) maps "
    "(2,5,3,4) to (2,30,4) (F.conv2d beside the hand-built im2col is timed as context).",
    source="001 nn.Unfold; 004 卷积 (计算卷积, 卷积在pytorch中实现是通过构造稀疏矩阵进行矩阵乘法)",
    make_inputs=make_im2col,
    variants={
        "im2col": naive(
            ieee_fp32(im2col),
            peak_bytes=lambda s, b: 2 * s["b"] * s["c"] * s["k"] ** 2 * s["h"] ** 2 * b,
            claim="conv_as_matmul",
        ),
        "conv2d": library(ieee_fp32(conv2d), peak_bytes=lambda s, b: 2 * s["b"] * s["o"] * s["h"] ** 2 * b),
    },
    oracle=im2col_float64,
    tolerance=TOLERANCE,
    dtypes=DTYPES,
    input_families=INPUT_FAMILIES,
    sizes={
        "quick": [{"h": h, "b": 4, "c": 16, "o": 32, "k": 3} for h in (16, 32, 64)],
        "full": [{"h": h, "b": 32, "c": 64, "o": 128, "k": 3} for h in (32, 64, 128, 256, 512)],
    },
    claims=(
        Claim(
            "unfold_shape",
            "unfold = nn.Unfold(kernel_size=(2,3)); input = torch.randn(2,5,3,4); "
            "output = unfold(input) # 2*30*4",
            "001",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "conv_as_matmul",
            "卷积 … 进行矩阵乘法实现卷积操作 [a convolution is one matrix product over the unfolded patches]",
            "004",
            ClaimKind.CORRECTNESS,
        ),
    ),
    checks={
        "unfold_shape": Check(check_unfold_shape, claim="unfold_shape"),
        "im2col_equals_conv2d": Check(check_im2col_equals_conv, claim="conv_as_matmul"),
        # How the library kernel computes (its peak memory): the notes' statement about PyTorch's
        # implementation, an erratum where false; the equivalence itself is `conv_as_matmul`.
        "conv_is_a_matrix_product": Check(check_conv_is_a_matrix_product),
    },
    # The notes teach the equivalence and never claim a speed of either way: conv2d beside the
    # hand-built im2col is the library's better way, timed as context (as in conv.transposed and
    # conv.dilated).
    verdict=FromFindings(),
    flops=conv_flops,
    x="h",
)


# ---- conv.transposed --------------------------------------------------------------------------


def make_transposed(size, dtype, device, seed):
    g = generator(device, seed)
    c, o, k = size["c"], size["o"], size["k"]
    x = _randn((size["b"], c, size["h"], size["h"]), g, dtype, device)
    w = _randn((c, o, k, k), g, dtype, device, scale=(c * k * k) ** -0.5)  # (C_in, C_out, k, k)
    b = _randn((o,), g, dtype, device)
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


# ---- conv.dilated -----------------------------------------------------------------------------


def make_dilated(size, dtype, device, seed):
    g = generator(device, seed)
    x, w, b = _conv_params(size, dtype, device, g)
    return x, w, b, size["d"]


def zero_kernel(x, w, b, dilation):
    # The dilated kernel has (d(k−1)+1)² taps of which k² are non-zero: for k=3, d=4, 81 taps for 9,
    # so a direct convolution does 9 × the MACs (the zeros are multiplied).
    o, c, k, _ = w.shape
    span = dilation * (k - 1) + 1
    wd = w.new_zeros(o, c, span, span)
    wd[:, :, ::dilation, ::dilation] = w
    return F.conv2d(x, wd, b, padding=span // 2)


def dilated_conv2d(x, w, b, dilation):
    return F.conv2d(x, w, b, padding=dilation * (w.shape[-1] - 1) // 2, dilation=dilation)


def dilated_float64(x, w, b, dilation):
    return conv_float64(x, w, b, padding=dilation * (w.shape[-1] - 1) // 2, dilation=dilation)


def _gradient_support(layers, n=96):
    """Which input pixels the centre output of a stack of convolutions depends on, measured:
    the non-zero entries of ∂out[centre]/∂input. Positive weights in float64, no nonlinearity, so
    every path contributes a positive term and a zero gradient means no path at all."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(1, 1, n, n, dtype=torch.float64, generator=g).requires_grad_()
    y = x
    for k, s, d in layers:
        w = 0.5 + torch.rand(1, 1, k, k, dtype=torch.float64, generator=g)
        y = F.conv2d(y, w, stride=s, dilation=d)
    y[0, 0, y.shape[-2] // 2, y.shape[-1] // 2].backward()
    rows = (x.grad[0, 0] != 0).any(1).nonzero().flatten()
    hit = x.grad[0, 0, rows.min() : rows.max() + 1, :]
    cols = (hit != 0).any(0).nonzero().flatten()
    hit = hit[:, cols.min() : cols.max() + 1]
    return int(rows.max() - rows.min() + 1), int((hit == 0).sum()), hit.numel()


def receptive_field(layers, kernel=lambda k, d: d * (k - 1) + 1):
    """The notes' recursion r_{k−1} = (r_k − 1)·s + f, from r = 1 at the output down to the input."""
    r = 1
    for k, s, d in reversed(layers):
        r = (r - 1) * s + kernel(k, d)
    return r


def check_receptive_field(device):
    """The recursion with f = d(k−1)+1 against the measured gradient extent; f = k (the kernel size,
    as the notes' formula reads without a word on dilation) against the same."""
    stacks = {
        "d=1,2,3,2,1": [(3, 1, 1), (3, 1, 2), (3, 1, 3), (3, 1, 2), (3, 1, 1)],
        "d=2,2,2": [(3, 1, 2)] * 3,
        "strided s=2,1,2 d=1,2,1": [(3, 2, 1), (3, 1, 2), (3, 2, 1)],
        "k=5,3 d=3,1 s=2,1": [(5, 2, 3), (3, 1, 1)],
    }
    observed = []
    for name, layers in stacks.items():
        extent, _, _ = _gradient_support(layers)
        want, plain = receptive_field(layers), receptive_field(layers, kernel=lambda k, d: k)
        observed.append((name, extent, want, plain))
    return judge_receptive_field(observed)


def judge_receptive_field(observed: list[tuple[str, int, int, int]]) -> Finding:
    """(stack, measured extent, recursion with f = d(k−1)+1, recursion with f = k) per stack. The
    technique: the recursion r = (r−1)s + f with the dilated span f matches the measured extent.
    The notes' formula says f without a word on dilation: where f = k is wrong on a dilated stack,
    that reading is an erratum (wrong formula), not the technique's failure."""
    matches = all(extent == want for _, extent, want, _ in observed)
    plain_wrong = [name for name, extent, _, plain in observed if plain != extent]
    errata = ()
    if plain_wrong:
        errata = (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "r = (r−1)·s + f with f the kernel size",
                "for dilated stacks f must be the dilated span d(k−1)+1: with f = k the recursion "
                f"misses the measured extent in {len(plain_wrong)}/{len(observed)} stacks "
                f"({', '.join(plain_wrong)})",
            ),
        )
    lines = "; ".join(f"{n}: measured {e}, recursion {w}, with f=k {p}" for n, e, w, p in observed)
    return Finding(Verdict.HOLDS if matches else Verdict.FAILS, lines, errata)


def check_gridding(device):
    """The notes: d = 1,2,3,2,1 enlarges the receptive field without the gridding effect. Measured as
    input pixels inside the receptive field that the output does not depend on at all, and the
    field itself against five undilated 3×3 layers."""
    extent_mixed, holes_mixed, n_mixed = _gradient_support([(3, 1, d) for d in (1, 2, 3, 2, 1)])
    _, holes_same, n_same = _gradient_support([(3, 1, 2)] * 3)
    extent_plain, _, _ = _gradient_support([(3, 1, 1)] * 5)
    return judge_gridding(extent_mixed, extent_plain, holes_mixed, n_mixed, holes_same, n_same)


def judge_gridding(
    extent_mixed: int, extent_plain: int, holes_mixed: int, n_mixed: int, holes_same: int, n_same: int
) -> Finding:
    """The notes: d = 1,2,3,2,1 enlarges the receptive field (beyond five undilated layers') and
    avoids gridding (no zero-gradient pixel inside it). d = 2,2,2 is the control: it must show the
    holes, or the measurement could not see gridding at all (then fails: nothing was shown)."""
    enlarged = extent_mixed > extent_plain
    held = enlarged and holes_mixed == 0 and holes_same > 0
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"d=1,2,3,2,1 sees {extent_mixed}×{extent_mixed} (five 3×3 layers without dilation: "
        f"{extent_plain}×{extent_plain}); zero-gradient pixels inside the receptive field: "
        f"d=1,2,3,2,1 {holes_mixed}/{n_mixed}, d=2,2,2 {holes_same}/{n_same} (gridding)"
        + (
            ""
            if holes_same > 0
            else "; the d=2,2,2 control shows NO holes: the measurement cannot see gridding"
        ),
    )


DILATED = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.dilated",
    tier=2,
    claim="A dilated convolution is a convolution with d−1 zeros inserted between kernel taps; the "
    "receptive field follows r_k = (r_{k−1}−1)·s + f; d=1,2,3,2,1 avoids the gridding effect.",
    source="004 Dilated Convolution; 001 nn.Conv2d dilation",
    make_inputs=make_dilated,
    variants={
        # The dense (d(k−1)+1)² kernel it convolves with, zeros included.
        "zero_kernel": naive(
            ieee_fp32(zero_kernel),
            claim="zeros_in_kernel",
            flops=lambda s: 2 * s["b"] * s["o"] * s["c"] * (s["d"] * (s["k"] - 1) + 1) ** 2 * s["h"] ** 2,
        ),
        "dilation": optimized(ieee_fp32(dilated_conv2d)),
    },
    oracle=dilated_float64,
    tolerance=TOLERANCE,
    dtypes=DTYPES,
    input_families=INPUT_FAMILIES,
    sizes={
        "quick": [{"d": d, "h": 32, "b": 4, "c": 16, "o": 16, "k": 3} for d in (1, 2, 4)],
        "full": [{"d": d, "h": 128, "b": 32, "c": 64, "o": 64, "k": 3} for d in (1, 2, 4, 8)],
    },
    claims=(
        Claim("zeros_in_kernel", "含义：在kernel两个元素之间增加d-1个0", "004", ClaimKind.CORRECTNESS),
        Claim(
            "receptive_field",
            "r_k = (r_{k-1} -1)×s_{k-1} +f_{k-1}, r_n=1",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "mixed_dilations",
            "可以通过d=1,d=2,d=3,d=2,d=1的设置方法既可以增大感受野，又能避免gridding effect的问题",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "receptive_field": Check(check_receptive_field, claim="receptive_field"),
        "gridding": Check(check_gridding, claim="mixed_dilations"),
    },
    # The notes never claim dilation is faster than the zero-filled kernel: the pair is timed as
    # context (as conv.im2col's and conv.transposed's pairs), deciding nothing.
    verdict=AllOf((Faster("dilation", "zero_kernel"), FromFindings())),
    flops=conv_flops,
    x="d",
)


# ---- conv.shapes ----------------------------------------------------------------------------------


def conv_out(n: int, f: int, p: int = 0, s: int = 1, d: int = 1) -> int:
    """⌊(n + 2p − d(f − 1) − 1) / s⌋ + 1: the size PyTorch documents for Conv2d."""
    return (n + 2 * p - d * (f - 1) - 1) // s + 1


def notes_conv_out(n: int, f: int, p: int = 0, s: int = 1) -> int:
    """The notes' Lower((n + 2p − f)/s + 1): no dilation term."""
    return (n + 2 * p - f) // s + 1


def check_output_size(device):
    grid = itertools.product((7, 8, 15), (1, 2, 3, 5), (0, 1, 2), (1, 2, 3), (1, 2))
    seen, layer_off, notes_off, dilated, notes_dilated_off = 0, [], [], 0, 0
    for n, f, p, s, d in grid:
        if conv_out(n, f, p, s, d) < 1:
            continue
        conv = nn.Conv2d(1, 1, f, stride=s, padding=p, dilation=d, device="meta")
        h, w = conv(torch.empty(1, 1, n, n + 1, device="meta")).shape[-2:]
        seen += 1
        if (h, w) != (conv_out(n, f, p, s, d), conv_out(n + 1, f, p, s, d)):
            layer_off.append((n, f, p, s, d, h, w))
        if d == 1 and h != notes_conv_out(n, f, p, s):
            notes_off.append((n, f, p, s, h))
        if d > 1:
            dilated += 1
            notes_dilated_off += h != notes_conv_out(n, f, p, s)
    return judge_output_size(seen, layer_off, notes_off, dilated, notes_dilated_off)


def judge_output_size(
    seen: int, layer_off: list, notes_off: list, dilated: int, notes_dilated_off: int
) -> Finding:
    """The notes' ⌊(n+2p−f)/s⌋+1 against real Conv2d layers without dilation (the convolutions they
    describe); the documented formula with d(f−1) against every layer. The notes never speak of
    dilation there: the dilated layers their formula misses are context, not an erratum."""
    held = seen > 0 and not layer_off and not notes_off
    evidence = (
        f"{seen} Conv2d configurations against ⌊(n+2p−d(f−1)−1)/s⌋+1: {len(layer_off)} off "
        f"{layer_off[:3]}; the notes' ⌊(n+2p−f)/s⌋+1 off for {len(notes_off)} dilation-1 ones "
        f"{notes_off[:3]} (and, having no d term, for {notes_dilated_off}/{dilated} dilated ones)"
    )
    return Finding(Verdict.HOLDS if held else Verdict.FAILS, evidence)


# cuDNN runs fp32 convs in TF32 by default (~1e-3); these compare convs at fp32 bounds or exactly.
@ieee_fp32
def check_same_padding(device):
    x = torch.randn(2, 3, 11, 12, generator=torch.Generator().manual_seed(0)).to(device)
    kept, errors = {}, {}
    for f in (1, 3, 5, 2, 4):
        # Even f: PyTorch warns that it pads a copy of the input asymmetrically; expected here.
        with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
            warnings.simplefilter("ignore", UserWarning)
            torch.manual_seed(f)  # seeded weights: the same numbers on every run
            conv = nn.Conv2d(3, 4, f, padding="same").to(device)
            same = conv(x)
        kept[f] = same.shape[-2:] == x.shape[-2:]
        if f % 2:  # the notes' p = (f−1)/2, an explicit symmetric padding, is the same conv
            explicit = nn.Conv2d(3, 4, f, padding=(f - 1) // 2, device=device)
            explicit.load_state_dict(conv.state_dict())
            errors[f] = ((explicit(x) - same).abs().max().item(), _conv_order_bound(explicit, x))
    try:
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
        raised = ""
    except ValueError as exc:
        raised = str(exc)
    return judge_same_padding(kept, errors, raised)


def judge_same_padding(kept: dict, errors: dict, stride2_error: str) -> Finding:
    """padding='same' keeps H×W (every f), equals the notes' p=(f−1)/2 for odd f (`errors`: f →
    (difference, the bound of two fp32 evaluations of the same sums)), and is refused with a stride
    (the size could not be kept)."""
    held = all(kept.values()) and all(e <= b for e, b in errors.values()) and bool(stride2_error)
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"padding='same' keeps H×W for f={[f for f, k in kept.items() if k]} of {list(kept)} (even f "
        "padded asymmetrically); for odd f it equals padding=(f−1)/2: "
        + ", ".join(f"f={f} off by {e:.2g} (bound {b:.2g})" for f, (e, b) in errors.items())
        + "; with stride 2: "
        + (f"ValueError {stride2_error[:80]!r}" if stride2_error else "accepted"),
    )


def check_weight_shapes(device):
    shapes = {
        "Conv2d(3,8,(3,5))": (tuple(nn.Conv2d(3, 8, (3, 5)).weight.shape), (8, 3, 3, 5)),
        "Conv2d(4,8,3,groups=2)": (tuple(nn.Conv2d(4, 8, 3, groups=2).weight.shape), (8, 2, 3, 3)),
        "Conv3d(3,8,(2,3,4))": (tuple(nn.Conv3d(3, 8, (2, 3, 4)).weight.shape), (8, 3, 2, 3, 4)),
        "ConvTranspose2d(3,8,3)": (tuple(nn.ConvTranspose2d(3, 8, 3).weight.shape), (3, 8, 3, 3)),
    }
    # The notes' transposed-conv output (n−1)·s − 2p + k, checked on a real layer.
    n, s, p, k = 7, 2, 1, 4
    out = nn.ConvTranspose2d(1, 1, k, stride=s, padding=p)(torch.randn(1, 1, n, n)).shape[-1]
    return judge_weight_shapes(shapes, out, (n - 1) * s - 2 * p + k)


def judge_weight_shapes(shapes: dict, transposed_out: int, formula_out: int) -> Finding:
    """Each layer's weight shape against the documented one ((C_out, C_in/groups, k…), transposed
    (C_in, C_out, k…)), and the transposed output against (n−1)s−2p+k."""
    off = {name: got for name, (got, want) in shapes.items() if got != want}
    held = not off and transposed_out == formula_out
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        "Conv2d weight (C_out, C_in/groups, kH, kW), Conv3d (C_out, C_in, kD, kH, kW), ConvTranspose2d "
        f"(C_in, C_out, k, k): {'all as documented' if not off else f'off: {off}'}; transposed output "
        f"{transposed_out} vs (n−1)s−2p+k = {formula_out} for n=7, s=2, p=1, k=4",
    )


VGG16_CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")
# The notes' table as written: three conv3-128 in block 2, and the shapes after each maxpool.
NOTES_VGG_CFG = (64, 64, "M", 128, 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")
NOTES_POOL_SHAPES = ((112, 112, 128), (56, 56, 256), (28, 32, 512), (14, 14, 256), (7, 7, 512))


def build_vgg(cfg, device="meta") -> nn.Sequential:
    layers, c = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1, device=device), nn.ReLU(inplace=True)]
            c = v
    layers += [
        nn.Flatten(),
        nn.Linear(512 * 7 * 7, 4096, device=device),
        nn.ReLU(inplace=True),
        nn.Linear(4096, 4096, device=device),
        nn.ReLU(inplace=True),
        nn.Linear(4096, 1000, device=device),
    ]
    return nn.Sequential(*layers)


def vgg_params_by_hand(cfg) -> int:
    """(9·C_in + 1)·C_out per 3×3 conv, (in + 1)·out per linear layer."""
    total, c = 0, 3
    for v in cfg:
        if v != "M":
            total += (9 * c + 1) * v
            c = v
    return total + (25088 + 1) * 4096 + (4096 + 1) * 4096 + (4096 + 1) * 1000


def pooled_shapes(model, size=224):
    x, shapes = torch.empty(1, 3, size, size, device="meta"), []
    for layer in model:
        x = layer(x)
        if isinstance(layer, nn.MaxPool2d):
            shapes.append((x.shape[2], x.shape[3], x.shape[1]))
    return tuple(shapes), x.shape


def formula_pooled_shapes(cfg, size=224) -> tuple:
    """(H, W, C) after each maxpool from the formulas alone: a 3×3 conv with p=1, s=1 keeps n
    (⌊(n+2−3)/1⌋+1 = n), a 2×2 pool with stride 2 gives ⌊(n−2)/2⌋+1."""
    n, c, out = size, 3, []
    for v in cfg:
        if v == "M":
            n = conv_out(n, 2, 0, 2)
            out.append((n, n, c))
        else:
            n, c = conv_out(n, 3, 1, 1), v
    return tuple(out)


def check_vgg16(device):
    model = build_vgg(VGG16_CFG)
    count = sum(p.numel() for p in model.parameters())
    weight_layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in model)
    shapes, logits = pooled_shapes(model)
    formula = formula_pooled_shapes(VGG16_CFG)
    wrong = [(i + 1, n, r) for i, (n, r) in enumerate(zip(NOTES_POOL_SHAPES, shapes)) if n != r]
    notes_model = build_vgg(NOTES_VGG_CFG)
    notes_layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in notes_model)
    notes_count = sum(p.numel() for p in notes_model.parameters())
    return judge_vgg16(
        count,
        wrong,
        notes_layers,
        notes_count,
        hand_count=vgg_params_by_hand(VGG16_CFG),
        layers=weight_layers,
        shapes_off=[(i + 1, r, f) for i, (r, f) in enumerate(zip(shapes, formula)) if r != f]
        + ([("logits", tuple(logits), (1, 1000))] if tuple(logits) != (1, 1000) else []),
    )


# Simonyan & Zisserman's configuration D; torchvision's vgg16 has the same count.
VGG16_PARAMS = 138_357_544


def judge_vgg16(
    count: int,
    wrong: list,
    notes_layers: int,
    notes_count: int,
    *,
    hand_count: int = VGG16_PARAMS,
    layers: int = 16,
    shapes_off: list = (),
) -> Finding:
    """The technique: VGG-16's shapes and parameter count follow from the conv/pool formulas: the
    network built locally has 16 weight layers, the hand count (9·C_in+1)·C_out + (in+1)·out, the
    published count, and the formulas' pooled shapes (`shapes_off`: where it does not). The notes'
    table's slips are wrong numbers of the notes, each an erratum with the real one."""
    errata = tuple(
        Erratum(ErratumKind.WRONG_SHAPE_OR_FORMULA, f"VGG-16 table pool{i}: {n}", f"the layer gives {r}")
        for i, n, r in wrong
    )
    if notes_layers != layers:
        errata += (
            Erratum(
                ErratumKind.WRONG_SHAPE_OR_FORMULA,
                "VGG-16 table: 3× conv3-128",
                f"{notes_layers} weight layers ({notes_count:,} params); VGG-16 has {layers} ({count:,})",
            ),
        )
    held = count == hand_count == VGG16_PARAMS and layers == 16 and not shapes_off
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"VGG-16 built locally: {layers} weight layers, {count:,} parameters (hand count {hand_count:,}, "
        f"published {VGG16_PARAMS:,}); pooled shapes "
        + (
            f"off the formulas at {list(shapes_off)}" if shapes_off else "112→56→28→14→7 as the formulas give"
        ),
        errata,
    )


def _roll_error(conv, x, shift):
    dims = (2, 3)
    a = conv(torch.roll(x, shift, dims))
    b = torch.roll(conv(x), shift, dims)
    return (a - b).abs().max().item()


def _conv_order_bound(conv, x) -> float:
    """Two fp32 evaluations of the same K = C·k² + 1 products in different orders differ by at most
    2·K·u of Σ|terms| ≤ max|x|·max_o Σ|w_o| + max|b|."""
    w, b = conv.weight.detach(), conv.bias.detach()
    k_terms = w[0].numel() + 1
    scale = x.abs().max().item() * w.abs().flatten(1).sum(1).max().item() + b.abs().max().item()
    return 2 * k_terms * U[FP32] * scale


@ieee_fp32  # exact and fp32 comparisons of convs, not cuDNN's TF32 default
def check_equivariance(device):
    """The notes: 'CNNs are famously equivariant with respect to translation'. Shifted by a roll
    (circular) or a plain shift (zeros in, compared away from the border), stride 1 and 2."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 16, 16, generator=g).to(device)
    with torch.random.fork_rng(devices=[]):  # seeded weights: the same numbers on every run
        torch.manual_seed(0)
        conv = nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular").to(device)
        strided = nn.Conv2d(3, 4, 3, stride=2, padding=1, padding_mode="circular").to(device)
    bound = _conv_order_bound(conv, x)
    circular = _roll_error(conv, x, (3, 5))
    conv.padding_mode = "zeros"
    zeros = _roll_error(conv, x, (3, 5))
    shifted = torch.zeros_like(x)
    shifted[..., 3:, 5:] = x[..., :-3, :-5]
    interior = (conv(shifted)[..., 4:-1, 6:-1] - conv(x)[..., 1:-4, 1:-6]).abs().max().item()
    odd = (strided(torch.roll(x, 1, 3)) - torch.roll(strided(x), 1, 3)).abs().max().item()
    even = (strided(torch.roll(x, 2, 3)) - torch.roll(strided(x), 1, 3)).abs().max().item()
    return judge_equivariance(circular, zeros, interior, even, odd, bound)


def judge_equivariance(
    circular: float, zeros: float, interior: float, even: float, odd: float, bound: float
) -> Finding:
    """conv(shift(x)) vs shift(conv(x)), each the largest difference, against the bound of two fp32
    evaluations of the same sums. Where it holds only under conditions (circular padding, or away
    from the border with zeros; shifts that are multiples of the stride), depends, with them named;
    where it breaks even there, fails."""
    exact_where_expected = circular <= bound and interior <= bound and even <= bound
    evidence = (
        f"circular padding: off by {circular:.2g}; zero padding: off by {zeros:.3g} at the border, "
        f"{interior:.2g} inside it; stride 2: a shift of 2 → shift of 1 off by {even:.2g}, a shift of 1 "
        f"off by {odd:.3g} (bound {bound:.2g})"
    )
    if not exact_where_expected:
        return Finding(Verdict.FAILS, "not equivariant even where it should be: " + evidence)
    if zeros > bound or odd > bound:
        return Finding(
            Verdict.DEPENDS,
            "depends (condition: the padding mode and the stride): exact with circular padding, only away "
            "from the "
            "border with the default zero padding (the notes' Conv2d default, and VGG's), and for "
            "strided convs only for shifts that are multiples of the stride: " + evidence,
        )
    return Finding(Verdict.HOLDS, evidence)


def check_padding_modes(device):
    """004 item 19: 'padding mode表述除了0之外还可以填充什么数字' (padding_mode: what number other
    than 0 to fill with). Each mode's padded input, read back through one-hot kernels (output channel
    t copies tap t, exact in float64), against numpy.pad, and whether a number is taken at all."""
    import numpy as np

    x = torch.arange(20, dtype=torch.float64).view(1, 1, 4, 5) + 1.0
    k, p = 5, 2
    eye = torch.eye(k * k, dtype=torch.float64).view(k * k, 1, k, k)
    numpy_modes = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    off, constant_border = {}, {}
    for mode, np_mode in numpy_modes.items():
        conv = nn.Conv2d(1, k * k, k, padding=p, padding_mode=mode, bias=False, dtype=torch.float64)
        with torch.no_grad():
            conv.weight.copy_(eye)
            taps = conv(x)[0]  # (k², 4, 5): tap (i, j) of output (r, c) is padded[r + i, c + j]
        padded = torch.zeros(4 + 2 * p, 5 + 2 * p, dtype=torch.float64)
        for t in range(k * k):
            i, j = divmod(t, k)
            padded[i : i + 4, j : j + 5] = taps[t]
        truth = np.pad(x[0, 0].numpy(), p, mode=np_mode)
        off[mode] = float(np.abs(padded.numpy() - truth).max())
        border = padded.clone()
        border[p:-p, p:-p] = float("nan")
        values = border[~border.isnan()]
        constant_border[mode] = bool((values == values[0]).all())
    try:
        nn.Conv2d(1, 1, 3, padding=1, padding_mode=1.0)
        number_error = ""
    except (ValueError, TypeError) as exc:
        number_error = f"{type(exc).__name__}: {exc}"
    return judge_padding_modes(off, constant_border, number_error)


def judge_padding_modes(off: dict, constant_border: dict, number_error: str) -> Finding:
    """The technique: padding_mode chooses how the border is made: zeros, reflect, replicate,
    circular, each equal to numpy.pad's constant/reflect/edge/wrap (`off`: largest difference,
    exact in float64). The notes call it a fill number: an erratum where a number is refused or
    the non-zero modes copy the input (a border that is not one constant): either makes it false."""
    held = set(off) == {"zeros", "reflect", "replicate", "circular"} and all(v == 0 for v in off.values())
    copied = [m for m, const in constant_border.items() if m != "zeros" and not const]
    errata = ()
    if number_error or copied:
        why = [f"padding_mode=1.0 raises {number_error[:120]}"] if number_error else []
        why += [f"{', '.join(copied)} copy the input's own pixels (no constant border)"] if copied else []
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "padding mode表述除了0之外还可以填充什么数字",
                "padding_mode is a way to make the border, not a fill number: " + "; ".join(why),
            ),
        )
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        "Conv2d padding_mode against numpy.pad (constant/reflect/edge/wrap), padding 2 on a 4×5 input: "
        + ", ".join(f"{m} off by {v:g}" for m, v in off.items()),
        errata,
    )


def check_stacked_3x3(device):
    """004 VGG: two stacked 3×3 convs see what one 5×5 sees (three: 7×7) with fewer parameters.
    The field measured as the extent of non-zero input gradients; parameters counted on layers."""
    c = 64
    extents = {
        name: _gradient_support(layers)[0]
        for name, layers in (
            ("2×3×3", [(3, 1, 1)] * 2),
            ("5×5", [(5, 1, 1)]),
            ("3×3×3", [(3, 1, 1)] * 3),
            ("7×7", [(7, 1, 1)]),
        )
    }

    def params(*kernels):
        return sum(p.numel() for k in kernels for p in nn.Conv2d(c, c, k, device="meta").parameters())

    counts = {"2×3×3": params(3, 3), "5×5": params(5), "3×3×3": params(3, 3, 3), "7×7": params(7)}
    return judge_stacked_3x3(extents, counts, c)


def judge_stacked_3x3(extents: dict, counts: dict, channels: int) -> Finding:
    """Holds where the stacks' measured fields equal the single kernels' (5, 7) and the stacks have
    fewer parameters."""
    pairs = (("2×3×3", "5×5"), ("3×3×3", "7×7"))
    held = all(extents[a] == extents[b] and counts[a] < counts[b] for a, b in pairs)
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"C={channels} in and out: "
        + "; ".join(
            f"{a} sees {extents[a]}×{extents[a]} with {counts[a]:,} parameters, one {b} sees "
            f"{extents[b]}×{extents[b]} with {counts[b]:,}"
            for a, b in pairs
        ),
    )


SHAPES = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.shapes",
    tier=3,
    claim="Conv output is ⌊(n+2p−f)/s⌋+1, 'same' padding is p=(f−1)/2, the weight is (C_out, C_in, kH, kW), "
    "the VGG-16 table as listed, and convolution is translation-equivariant; padding_mode picks the "
    "padding; two stacked 3×3 convs see a 5×5 field with fewer parameters.",
    source="004 计算卷积 / 二维卷积细节 (item 19) / VGG / equivariance",
    claims=(
        Claim(
            "output_size",
            "如果是有strided的卷积操作，最后图片大小应该为: Lower((n+2p-f)/s+1)",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim("same_padding", "对于same padding, 2p-f+1=0, 结果应该为 p=(f-1)/2", "004", ClaimKind.BEHAVIOUR),
        Claim(
            "weight_shape", "二维卷积实际上的weight是四维的(C_out,C_in,K_H,K_W)", "004", ClaimKind.BEHAVIOUR
        ),
        Claim(
            "vgg16",
            "VGG-16：input : 224 * 224 *3，conv 为3 * 3,padding 1 stride 1, maxpool stride=size=2 "
            "[the table]",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "equivariance",
            "CNNs are famously equivariant with respect to translation",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim("padding_mode", "padding mode表述除了0之外还可以填充什么数字", "004", ClaimKind.BEHAVIOUR),
        Claim(
            "stacked_3x3",
            "堆叠多个3*3卷积核来替代大卷积核来减少所需参数，同时保证receptive field大小 "
            "(2个3 * 3对应一个5 * 5，3个3 * 3对应一个 7 * 7)",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
    ),
    checks={
        "output_size": Check(check_output_size, devices=("cpu",), claim="output_size"),
        "same_padding": Check(check_same_padding, claim="same_padding"),
        "weight_shapes": Check(check_weight_shapes, devices=("cpu",), claim="weight_shape"),
        "vgg16": Check(check_vgg16, devices=("cpu",), claim="vgg16"),
        # The one conditional claim: its `depends` names the condition (padding mode, stride).
        "equivariance": Check(check_equivariance, claim="equivariance"),
        "padding_modes": Check(check_padding_modes, devices=("cpu",), claim="padding_mode"),
        "stacked_3x3": Check(check_stacked_3x3, devices=("cpu",), claim="stacked_3x3"),
    },
)


# conv.pooling ----------------------------------------------------------------------------------
# Notes 001 "Pooling layer": "FractionalMaxPool2d: the max-pooling is applied in kH * kW regions by
# stochastic step"; "LPPool: return the norm of the current feature vector".


def lp_pool_float64(x: torch.Tensor, p: float, k: int) -> torch.Tensor:
    """(Σ_window x^p)^(1/p) over non-overlapping k×k windows, in float64, by explicit slicing: the
    formula torch documents for LPPool2d, sharing no code with it."""
    x = x.double()
    n, c, h, w = x.shape
    out = torch.empty(n, c, h // k, w // k, dtype=torch.float64, device=x.device)
    for i in range(h // k):
        for j in range(w // k):
            out[:, :, i, j] = (
                x[:, :, i * k : (i + 1) * k, j * k : (j + 1) * k].pow(p).sum((-2, -1)).pow(1 / p)
            )
    return out


def judge_lp_pool(rel_err: float, bound: float, signed_sum_gap: float) -> Finding:
    """The technique: LPPool2d equals the window's (Σ x^p)^(1/p) within fp32's bound. The notes call
    it "the norm": true for non-negative inputs; with p = 1 on signed inputs it returns Σx, not Σ|x|
    (`signed_sum_gap` is how far the two were apart, relative)."""
    verdict = Verdict.HOLDS if rel_err <= bound else Verdict.FAILS
    errata = ()
    if signed_sum_gap > bound:
        errata = (
            Erratum(
                ErratumKind.WRONG_STATEMENT,
                "LPPool : return the norm of the current feature vector",
                f"LPPool2d computes (Σ x^p)^(1/p) without |·|: with p=1 on signed inputs it returned Σx, "
                f"{signed_sum_gap:.3g} (relative) away from the 1-norm Σ|x|; a norm only for x ≥ 0 or even p",
            ),
        )
    return Finding(
        verdict,
        f"LPPool2d vs float64 (Σ x^p)^(1/p) over 2×2 windows, p = 2 and 3, x > 0: max relative error "
        f"{rel_err:.2e} (bound {bound:.2e})",
        errata,
    )


def check_lp_pool(device):
    g = generator(device, 11)
    x = 0.1 + torch.rand(2, 3, 8, 10, generator=g, device=device)  # positive: a norm's domain
    # Per window: k² = 4 positive terms x^p (one rounding each), their sum (≤ 3 more, positive
    # terms: no cancellation), ×k² and the p-th root (2 more): ≤ (k² + 4)·u relative before the
    # root, which divides it by p ≥ 2; held to (k² + 4)·u.
    bound = (4 + 4) * U[FP32]
    errs = []
    for p in (2.0, 3.0):
        got = nn.LPPool2d(p, kernel_size=2)(x)
        truth = lp_pool_float64(x, p, 2)
        errs.append(((got.double() - truth).abs() / truth.abs()).max().item())
    signed = torch.randn(2, 3, 8, 10, generator=g, device=device)
    as_sum = nn.LPPool2d(1.0, kernel_size=2)(signed).double()
    one_norm = lp_pool_float64(signed.abs(), 1.0, 2)
    gap = ((as_sum - one_norm).abs().max() / one_norm.abs().max()).item()
    return judge_lp_pool(max(errs), bound, gap)


def judge_fractional_max_pool(
    shapes_ok: bool, values_from_input: bool, same_seed_same: bool, seeds_differ: bool
) -> Finding:
    """FractionalMaxPool2d: the requested output size, every output an input element (a max over
    its window), the same random samples giving the same windows and other samples other windows
    (the stochastic, non-integer step the notes describe)."""
    parts = {
        "output size as requested": shapes_ok,
        "each output is an element of its input": values_from_input,
        "same random samples, same windows": same_seed_same,
        "other random samples, other windows": seeds_differ,
    }
    failed = [name for name, ok in parts.items() if not ok]
    verdict = Verdict.FAILS if failed else Verdict.HOLDS
    detail = "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in parts.items())
    return Finding(verdict, f"FractionalMaxPool2d(2) of 10×13 to 5×7 (steps 2.0 and 1.86): {detail}")


def check_fractional_max_pool(device):
    g = generator(device, 12)
    x = torch.randn(2, 3, 10, 13, generator=g, device=device)

    def pooled(samples):
        pool = nn.FractionalMaxPool2d(2, output_size=(5, 7), return_indices=True, _random_samples=samples)
        return pool(x)

    samples_a = torch.rand(2, 3, 2, generator=g, device=device)
    samples_b = torch.rand(2, 3, 2, generator=g, device=device)
    out_a, idx_a = pooled(samples_a)
    out_a2, idx_a2 = pooled(samples_a)
    out_b, idx_b = pooled(samples_b)
    gathered = x.flatten(2).gather(2, idx_a.flatten(2)).view_as(out_a)
    return judge_fractional_max_pool(
        shapes_ok=tuple(out_a.shape) == (2, 3, 5, 7),
        values_from_input=torch.equal(gathered, out_a),
        same_seed_same=torch.equal(idx_a, idx_a2) and torch.equal(out_a, out_a2),
        seeds_differ=not torch.equal(idx_a, idx_b),
    )


POOLING = Case(
    # fp32 held to IEEE bounds: not measured on CUDA where TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32
    requires=("ieee_fp32",),
    id="conv.pooling",
    tier=3,
    claim="FractionalMaxPool2d max-pools kH×kW regions with a stochastic step; LPPool returns the "
    "norm of each window.",
    source="001 Pooling layer",
    claims=(
        Claim(
            "fractional_max_pool",
            "FractionalMaxPool2d : ... the max-pooling is applied in kH * kW regions by stochastic step.",
            "001",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "lp_pool", "LPPool : return the norm of the current feature vector.", "001", ClaimKind.CORRECTNESS
        ),
    ),
    checks={
        "lp_pool_window_norm": Check(check_lp_pool, claim="lp_pool"),
        "fractional_max_pool_stochastic_step": Check(check_fractional_max_pool, claim="fractional_max_pool"),
    },
    verdict=FromFindings(),
)
