"""Convolution shapes: the output-size formula, `padding='same'`, weight shapes, VGG-16, equivariance
(notes 004 "计算卷积", "二维卷积细节", "VGG", "equivariance").

Shapes are traced on the ``meta`` device where possible: a VGG-16 forward at 224×224 costs
~15.5 GFLOP on real tensors and nothing on meta ones, and the shapes are the same.
"""

from __future__ import annotations

import itertools
import warnings

import torch
from torch import nn

from cases.spec import Case, Check, Finding, Verdict


def conv_out(n: int, f: int, p: int = 0, s: int = 1, d: int = 1) -> int:
    """⌊(n + 2p − d(f − 1) − 1) / s⌋ + 1: the size PyTorch documents for Conv2d."""
    return (n + 2 * p - d * (f - 1) - 1) // s + 1


def notes_conv_out(n: int, f: int, p: int = 0, s: int = 1) -> int:
    """The notes' Lower((n + 2p − f)/s + 1): no dilation term."""
    return (n + 2 * p - f) // s + 1


def check_output_size(device):
    grid = itertools.product((7, 8, 15), (1, 2, 3, 5), (0, 1, 2), (1, 2, 3), (1, 2))
    seen = dilated = notes_wrong = 0
    for n, f, p, s, d in grid:
        if conv_out(n, f, p, s, d) < 1:
            continue
        conv = nn.Conv2d(1, 1, f, stride=s, padding=p, dilation=d, device="meta")
        h, w = conv(torch.empty(1, 1, n, n + 1, device="meta")).shape[-2:]
        assert (h, w) == (conv_out(n, f, p, s, d), conv_out(n + 1, f, p, s, d)), (n, f, p, s, d, h, w)
        seen += 1
        if d == 1:
            assert h == notes_conv_out(n, f, p, s), f"notes' formula wrong without dilation at {(n, f, p, s)}"
        else:
            dilated += 1
            notes_wrong += h != notes_conv_out(n, f, p, s)
    assert notes_wrong > 0, "dilation should change the output size"
    return Finding(
        Verdict.HOLDS,
        f"{seen} Conv2d configurations match ⌊(n+2p−d(f−1)−1)/s⌋+1; the notes' ⌊(n+2p−f)/s⌋+1 is "
        f"right for all dilation-1 ones and wrong for {notes_wrong}/{dilated} dilated ones (no d term)",
    )


def check_same_padding(device):
    x = torch.randn(2, 3, 11, 12, generator=torch.Generator().manual_seed(0)).to(device)
    for f in (1, 3, 5, 2, 4):
        # Even f: PyTorch warns that it pads a copy of the input asymmetrically; expected here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            conv = nn.Conv2d(3, 4, f, padding="same", device=device)
            same = conv(x)
        assert same.shape[-2:] == x.shape[-2:], f"'same' changed the size for f={f}"
        if f % 2:  # the notes' p = (f−1)/2, an explicit symmetric padding, is the same conv
            explicit = nn.Conv2d(3, 4, f, padding=(f - 1) // 2, device=device)
            explicit.load_state_dict(conv.state_dict())
            torch.testing.assert_close(explicit(x), same, rtol=1e-5, atol=1e-5)
    try:
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
        raised = False
    except ValueError:
        raised = True
    assert raised, "padding='same' with stride 2 should raise ValueError"
    return Finding(
        Verdict.HOLDS,
        "padding='same' keeps H×W for f in 1..5 (even f padded asymmetrically, where p=(f−1)/2 is no "
        "integer); for odd f it equals padding=(f−1)/2; 'same' with stride 2 raises ValueError",
    )


def check_weight_shapes(device):
    shapes = {
        "Conv2d(3,8,(3,5))": (nn.Conv2d(3, 8, (3, 5)).weight.shape, (8, 3, 3, 5)),
        "Conv2d(4,8,3,groups=2)": (nn.Conv2d(4, 8, 3, groups=2).weight.shape, (8, 2, 3, 3)),
        "Conv3d(3,8,(2,3,4))": (nn.Conv3d(3, 8, (2, 3, 4)).weight.shape, (8, 3, 2, 3, 4)),
        "ConvTranspose2d(3,8,3)": (nn.ConvTranspose2d(3, 8, 3).weight.shape, (3, 8, 3, 3)),
    }
    for name, (got, want) in shapes.items():
        assert tuple(got) == want, f"{name}: weight {tuple(got)}, expected {want}"
    # The notes' transposed-conv output (n−1)·s − 2p + k, checked on a real layer.
    n, s, p, k = 7, 2, 1, 4
    out = nn.ConvTranspose2d(1, 1, k, stride=s, padding=p)(torch.randn(1, 1, n, n)).shape[-1]
    assert out == (n - 1) * s - 2 * p + k
    return Finding(
        Verdict.HOLDS,
        "Conv2d weight is (C_out, C_in/groups, kH, kW) as the notes say; Conv3d adds kD in front of kH; "
        f"ConvTranspose2d stores (C_in, C_out, k, k); its output (n−1)s−2p+k = {out} for n=7,s=2,p=1,k=4",
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
        nn.Linear(512 * 7 * 7, 4096, device=device), nn.ReLU(inplace=True),
        nn.Linear(4096, 4096, device=device), nn.ReLU(inplace=True),
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


def check_vgg16(device):
    model = build_vgg(VGG16_CFG)
    count = sum(p.numel() for p in model.parameters())
    assert count == vgg_params_by_hand(VGG16_CFG) == 138_357_544, f"VGG-16 has {count} parameters"
    weight_layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in model)
    assert weight_layers == 16
    shapes, logits = pooled_shapes(model)
    assert shapes == ((112, 112, 64), (56, 56, 128), (28, 28, 256), (14, 14, 512), (7, 7, 512)), shapes
    assert tuple(logits) == (1, 1000)
    wrong = [(i + 1, n, r) for i, (n, r) in enumerate(zip(NOTES_POOL_SHAPES, shapes)) if n != r]
    notes_model = build_vgg(NOTES_VGG_CFG)
    notes_layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in notes_model)
    notes_count = sum(p.numel() for p in notes_model.parameters())
    verdict = Verdict.FAILS if wrong or notes_layers != 16 else Verdict.HOLDS
    return Finding(
        verdict,
        f"VGG-16 built locally: 16 weight layers, {count:,} parameters (= hand count); the notes' table "
        f"lists {notes_layers} weight layers (3× conv3-128, {notes_count:,} params) and "
        f"{len(wrong)}/5 wrong pooled shapes: "
        + "; ".join(f"pool{i} notes {n} real {r}" for i, n, r in wrong),
    )


def _roll_error(conv, x, shift):
    dims = (2, 3)
    a = conv(torch.roll(x, shift, dims))
    b = torch.roll(conv(x), shift, dims)
    return (a - b).abs().max().item()


def check_equivariance(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 16, 16, generator=g).to(device)
    conv = nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular", device=device)
    circular = _roll_error(conv, x, (3, 5))
    assert circular == 0.0, f"circular padding should be exactly equivariant, off by {circular:.3g}"
    conv.padding_mode = "zeros"
    zeros = _roll_error(conv, x, (3, 5))
    assert zeros > 1e-2, "zero padding should break equivariance at the wrapped border"
    # Zero padding: equivariant away from the border (shift without wrap, compare the interior).
    shifted = torch.zeros_like(x)
    shifted[..., 3:, 5:] = x[..., :-3, :-5]
    a, b = conv(shifted)[..., 4:-1, 6:-1], conv(x)[..., 1:-4, 1:-6]
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    strided = nn.Conv2d(3, 4, 3, stride=2, padding=1, padding_mode="circular", device=device)
    odd = (strided(torch.roll(x, 1, 3)) - torch.roll(strided(x), 1, 3)).abs().max().item()
    even = (strided(torch.roll(x, 2, 3)) - torch.roll(strided(x), 1, 3)).abs().max().item()
    assert even == 0.0 and odd > 1e-2, f"stride 2: even shift off by {even:.3g}, odd shift off by {odd:.3g}"
    verdict = Verdict.DEPENDS if zeros > 0 or odd > 0 else Verdict.HOLDS
    return Finding(
        verdict,
        f"conv(roll(x)) == roll(conv(x)) bit-exactly with circular padding; with zero padding off by "
        f"{zeros:.3g} at the border (interior equal); a stride-2 conv maps a shift of 2 to a shift of 1 exactly, a shift of 1 to nothing (off by {odd:.3g})",
    )


CASE = Case(
    id="conv.shapes",
    tier=3,
    claim="Conv output is ⌊(n+2p−f)/s⌋+1, 'same' padding is p=(f−1)/2, the weight is (C_out, C_in, kH, kW), "
    "the VGG-16 table as listed, and convolution is translation-equivariant.",
    source="004 计算卷积 / 二维卷积细节 / VGG / equivariance",
    checks={
        "output_size": Check(check_output_size, devices=("cpu",)),
        "same_padding": Check(check_same_padding),
        "weight_shapes": Check(check_weight_shapes, devices=("cpu",)),
        "vgg16": Check(check_vgg16, devices=("cpu",)),
        "equivariance": Check(check_equivariance),
    },
)
