"""conv.shapes: the output-size formula, `padding='same'`, weight shapes, VGG-16, equivariance,
padding modes and stacked 3×3 convolutions (notes 004 "计算卷积", "二维卷积细节", "VGG",
"equivariance"). Shapes are traced on the ``meta`` device where possible: a VGG-16 forward at
224×224 costs ~15.5 GFLOP on real tensors and nothing on meta ones, and the shapes are the same.
"""

from __future__ import annotations

import itertools
import warnings

import torch
from torch import nn

from cases._lib.conv import FP32, gradient_support
from cases._lib.precision import ieee_fp32
from cases.spec import UNIT_ROUNDOFF as U
from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict


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
    """The notes' weight shapes, (C_out, C_in, K_H, K_W) for Conv2d and (C_out, C_in, K[0], K[1],
    K[2]) for a 3-D conv, against real layers at their defaults (groups=1); a grouped Conv2d and
    a ConvTranspose2d, which the notes do not describe, as context."""
    notes = {
        "Conv2d(3,8,(3,5))": (tuple(nn.Conv2d(3, 8, (3, 5), device="meta").weight.shape), (8, 3, 3, 5)),
        "Conv3d(3,8,(2,3,4))": (
            tuple(nn.Conv3d(3, 8, (2, 3, 4), device="meta").weight.shape),
            (8, 3, 2, 3, 4),
        ),
    }
    context = {
        "Conv2d(4,8,3,groups=2)": tuple(nn.Conv2d(4, 8, 3, groups=2, device="meta").weight.shape),
        "ConvTranspose2d(3,8,3)": tuple(nn.ConvTranspose2d(3, 8, 3, device="meta").weight.shape),
    }
    return judge_weight_shapes(notes, context)


def judge_weight_shapes(notes: dict, context: dict) -> Finding:
    """name → (the layer's weight shape, the notes' form) for the layers the notes describe: holds
    where every one is the notes' form, fails where one is not. `context`: other layers' shapes,
    reported (a grouped conv's C_in/groups, a transposed conv's (C_in, C_out, …))."""
    off = {name: got for name, (got, want) in notes.items() if got != want}
    return Finding(
        Verdict.FAILS if off or not notes else Verdict.HOLDS,
        "weights against the notes' (C_out, C_in, K…): "
        + ", ".join(f"{n} {got}" for n, (got, _) in notes.items())
        + (f": off {off}" if off else ": as the notes say")
        + "; beside them (not the notes' claim): "
        + ", ".join(f"{n} {got}" for n, got in context.items()),
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
    """The notes' VGG-16 table as written: the network it lists (three conv3-128) built with its own
    recipe (3×3 convs, padding 1, stride 1; 2×2 max-pools, stride 2) from a 224×224×3 input, its
    shapes after each pool against the table's, and its weight layers against the 16 of the name.
    VGG-16 itself (configuration D) is built beside it: its count against the published one."""
    model = build_vgg(VGG16_CFG)
    count = sum(p.numel() for p in model.parameters())
    weight_layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in model)
    notes_model = build_vgg(NOTES_VGG_CFG)
    notes_shapes, logits = pooled_shapes(notes_model)
    notes_layers = sum(isinstance(m, (nn.Conv2d, nn.Linear)) for m in notes_model)
    notes_count = sum(p.numel() for p in notes_model.parameters())
    wrong = [(i + 1, n, r) for i, (n, r) in enumerate(zip(NOTES_POOL_SHAPES, notes_shapes)) if n != r]
    reference_ok = (
        count == vgg_params_by_hand(VGG16_CFG) == VGG16_PARAMS
        and weight_layers == 16
        and pooled_shapes(model)[0] == formula_pooled_shapes(VGG16_CFG)
        and tuple(logits) == (1, 1000)
    )
    return judge_vgg16(wrong, notes_layers, notes_count, count, reference_ok)


# Simonyan & Zisserman's configuration D; torchvision's vgg16 has the same count.
VGG16_PARAMS = 138_357_544


def judge_vgg16(wrong: list, notes_layers: int, notes_count: int, count: int, reference_ok: bool) -> Finding:
    """`wrong`: (pool, the table's (H, W, C), what the listed network gives) where they differ;
    `notes_layers`/`notes_count`: the listed network's weight layers and parameters; `count`: VGG-16's
    own, built locally, and `reference_ok` whether it matches the hand count, the published count
    and the formulas' shapes. Holds where the table's shapes are what its network gives and it has
    VGG-16's 16 weight layers; fails otherwise (and where the reference itself is off)."""
    held = reference_ok and not wrong and notes_layers == 16
    table = "; ".join(f"after pool {i} the table says {n}, the network gives {r}" for i, n, r in wrong)
    return Finding(
        Verdict.HOLDS if held else Verdict.FAILS,
        f"the table's network: {notes_layers} weight layers, {notes_count:,} parameters (VGG-16: 16, "
        f"{count:,}, as published: {reference_ok}); "
        + (f"{len(wrong)} of 5 pooled shapes off: {table}" if wrong else "pooled shapes as listed")
        + (
            ""
            if notes_layers == 16
            else "; the table lists three conv3-128, VGG-16 has two (which fixes the count)"
        ),
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
    """The notes: padding_mode says what number other than 0 to pad with. Holds where a number is
    taken as the fill; fails where a number is refused (`number_error`) or the non-zero modes copy
    the input's own pixels (`constant_border`: mode → one constant around the image). `off`: each
    mode against numpy.pad's constant/reflect/edge/wrap, what the modes really are (context)."""
    copied = [m for m, const in constant_border.items() if m != "zeros" and not const]
    modes_ok = set(off) == {"zeros", "reflect", "replicate", "circular"} and all(v == 0 for v in off.values())
    why = [f"padding_mode=1.0 raises {number_error[:120]}"] if number_error else []
    why += [f"{', '.join(copied)} copy the input's own pixels (no constant border)"] if copied else []
    return Finding(
        Verdict.FAILS if why else Verdict.HOLDS,
        (
            "padding_mode is a way to make the border, not a fill number: " + "; ".join(why)
            if why
            else "a number fills"
        )
        + "; Conv2d padding_mode against numpy.pad (constant/reflect/edge/wrap), padding 2 on a 4×5 input: "
        + ", ".join(f"{m} off by {v:g}" for m, v in off.items())
        + ("" if modes_ok else " (NOT all equal)")
        + "; a constant c other than 0: F.pad(x, (p,)*4, value=c), then a padding-0 conv",
    )


def check_stacked_3x3(device):
    """004 VGG: two stacked 3×3 convs see what one 5×5 sees (three: 7×7) with fewer parameters.
    The field measured as the extent of non-zero input gradients; parameters counted on layers."""
    c = 64
    extents = {
        name: gradient_support(layers)[0]
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
    "the VGG-16 table as listed, and convolution is translation-equivariant; padding_mode picks a "
    "number other than 0 to pad with; two stacked 3×3 convs see a 5×5 field with fewer parameters.",
    source="004 计算卷积 / 二维卷积细节 (item 19) / VGG / equivariance",
    claims=(
        Claim(
            "output_size",
            "如果是有strided的卷积操作，最后图片大小应该为: $Lower(\\frac{n+2p-f}{s}+1)$",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="a Conv2d at its default dilation=1 (the notes' formula has no dilation) outputs "
            "⌊(n+2p−f)/s⌋+1",
        ),
        Claim(
            "same_padding",
            "对于**same padding**,$2p-f+1=0$,结果应该为$p=\\frac{f-1}{2}$",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="'same' padding keeps the size, and for an odd kernel it is padding=(f−1)/2",
        ),
        Claim(
            "weight_shape",
            "二维卷积实际上的weight是四维的$(C_{out},C_{in},K_{H},K_{W})$ … "
            "注意到卷积的weight: $(C_{out},C_{in},K[0],K[1],K[2])$",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="Conv2d's weight is (C_out, C_in, K_H, K_W) and Conv3d's (C_out, C_in, K0, K1, K2), at "
            "their default groups=1",
        ),
        Claim(
            "vgg16",
            "VGG-16： … input : 224 * 224 *3，conv 为3 * 3,padding 1 stride 1, maxpool stride=size=2 … "
            "**maxpool** --- 112 * 112 * 128 > - conv3 - 128 > - conv3 - 128 > - conv3 - 128 > - "
            "**maxpool** --- 56 * 56 * 256 … **maxpool** --- 28 * 32 * 512 … **maxpool** --- 14 * 14 * 256",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the listed network is VGG-16 (16 weight layers), and the shapes after its pools are "
            "the table's",
        ),
        Claim(
            "equivariance",
            "CNNs are famously equivariant with respect to translation",
            "004",
            ClaimKind.BEHAVIOUR,
        ),
        Claim(
            "padding_mode",
            "padding mode表述除了0之外还可以填充什么数字",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="padding_mode chooses a number other than 0 to pad with",
        ),
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
