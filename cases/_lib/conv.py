"""What the `conv.*` cases share: their tolerances, dtypes and input families, the random
convolution operands, a convolution's output length, the float64 tap loop every hand-built form is
checked against, and the measured receptive field (the non-zero input gradients of a stack)."""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

from cases._lib.inputs import strided
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import InputFamily, Tol

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


def scaled_randn(shape, g, dtype, device, scale=1.0):
    return (scale * torch.randn(shape, generator=g, dtype=torch.float32, device=device)).to(dtype)


def conv_params(size, dtype, device, g):
    c, o, k = size["c"], size["o"], size["k"]
    x = scaled_randn((size["b"], c, size["h"], size["h"]), g, dtype, device)
    w = scaled_randn((o, c, k, k), g, dtype, device, scale=(c * k * k) ** -0.5)
    b = scaled_randn((o,), g, dtype, device)
    return x, w, b


def taps(h_in, k, stride, pad, dil):
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
    ho = taps(x.shape[-2], k, stride, padding, dilation)
    wo = taps(x.shape[-1], k, stride, padding, dilation)
    xp = F.pad(x64, (padding,) * 4)
    out = b64.view(1, -1, 1, 1).expand(x.shape[0], -1, ho, wo).clone()
    for i, j in itertools.product(range(k), repeat=2):
        r, c = i * dilation, j * dilation
        patch = xp[:, :, r : r + stride * (ho - 1) + 1 : stride, c : c + stride * (wo - 1) + 1 : stride]
        out += torch.einsum("bchw,oc->bohw", patch, w64[:, :, i, j])
    return out


def gradient_support(layers, n=96):
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
