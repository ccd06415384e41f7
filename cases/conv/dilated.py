"""conv.dilated: a dilated convolution as an ordinary one with a kernel holding d−1 zeros
between taps, checked against the float64 tap loop and timed against `dilation=d` (notes 004
"Dilated Convolution"). The checks test the receptive-field recursion and the gridding effect
against the measured extent of non-zero input gradients.
"""

from __future__ import annotations

import torch.nn.functional as F

from cases._lib.conv import (
    DTYPES,
    INPUT_FAMILIES,
    TOLERANCE,
    conv_float64,
    conv_flops,
    conv_params,
    gradient_support,
)
from cases._lib.inputs import generator
from cases._lib.precision import ieee_fp32
from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict, naive, optimized
from harness.contract.rules import AllOf, Faster, FromFindings


def make_dilated(size, dtype, device, seed):
    g = generator(device, seed)
    x, w, b = conv_params(size, dtype, device, g)
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


def receptive_field(layers, kernel=lambda k, d: d * (k - 1) + 1):
    """The notes' recursion r_{k−1} = (r_k − 1)·s + f, from r = 1 at the output down to the input."""
    r = 1
    for k, s, d in reversed(layers):
        r = (r - 1) * s + kernel(k, d)
    return r


def check_receptive_field(device):
    """The notes' recursion with f the kernel size (004 names the kernel f×f: 'kernel是(f*f)') against
    the measured gradient extent, on dilated stacks (the section's subject) and an undilated one;
    and the recursion with f = d(k−1)+1, the dilated kernel's span, against the same."""
    stacks = {
        "d=1,2,3,2,1": [(3, 1, 1), (3, 1, 2), (3, 1, 3), (3, 1, 2), (3, 1, 1)],
        "d=2,2,2": [(3, 1, 2)] * 3,
        "strided s=2,1,2 d=1,2,1": [(3, 2, 1), (3, 1, 2), (3, 2, 1)],
        "k=5,3 d=3,1 s=2,1": [(5, 2, 3), (3, 1, 1)],
        "undilated k=3,5,3 s=2,1,1": [(3, 2, 1), (5, 1, 1), (3, 1, 1)],
    }
    observed = []
    for name, layers in stacks.items():
        extent, _, _ = gradient_support(layers)
        span, notes = receptive_field(layers), receptive_field(layers, kernel=lambda k, d: k)
        observed.append((name, extent, span, notes))
    return judge_receptive_field(observed)


def judge_receptive_field(observed: list[tuple[str, int, int, int]]) -> Finding:
    """(stack, measured extent, recursion with f = d(k−1)+1, the notes' recursion with f = k) per
    stack. Holds where the notes' recursion gives the measured extent on every stack; fails where
    it misses one (saying whether f = d(k−1)+1 repairs it). A measurement that the span recursion
    misses too fails as well: the reference itself is then in doubt."""
    notes_wrong = [name for name, extent, _, notes in observed if notes != extent]
    span_wrong = [name for name, extent, span, _ in observed if span != extent]
    lines = "; ".join(f"{n}: measured {e}, the notes' f=k {p}, f=d(k−1)+1 {w}" for n, e, w, p in observed)
    if not observed or span_wrong:
        return Finding(Verdict.FAILS, f"the measured extent leaves even f=d(k−1)+1 at {span_wrong}: {lines}")
    if notes_wrong:
        return Finding(
            Verdict.FAILS,
            f"the notes' recursion with f the kernel size misses the receptive field of "
            f"{len(notes_wrong)}/{len(observed)} stacks ({', '.join(notes_wrong)}); with f = d(k−1)+1, "
            f"the dilated kernel's span, it gives every one: {lines}",
        )
    return Finding(Verdict.HOLDS, lines)


def check_gridding(device):
    """The notes: d = 1,2,3,2,1 enlarges the receptive field without the gridding effect. Measured as
    input pixels inside the receptive field that the output does not depend on at all, and the
    field itself against five undilated 3×3 layers."""
    extent_mixed, holes_mixed, n_mixed = gradient_support([(3, 1, d) for d in (1, 2, 3, 2, 1)])
    _, holes_same, n_same = gradient_support([(3, 1, 2)] * 3)
    extent_plain, _, _ = gradient_support([(3, 1, 1)] * 5)
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
            "$r_k = (r_{k-1} -1)\\times s_{k-1} +f_{k-1}$ … $r_n=1,r_k$表示第k层的感受野",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="in the section on dilated convolution, the receptive field follows r = (r−1)·s + f "
            "layer by layer from r = 1 at the output, f the kernel size (004: 'kernel是(f*f)')",
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
