"""layout.contiguous timings the generic glue cannot express: one op on the same logical tensor in
three layouts (row-major, column-major view, column-major made contiguous first), and a conv layer
in NCHW vs channels_last. Each point first checks the result against the row-major one, then times.

extra_info carries ``case=layout.contiguous`` and an ``op`` key; ``size_label`` starts with the op so
a report's per-(case, size) grouping never compares two different ops.
"""

from __future__ import annotations

import functools

import pytest
import torch

from cases.layout import conv_tolerance, make_matrix
from harness import measure, precision_flags, requirements
from suite import options

CASE_ID = "layout.contiguous"
SIZES = {"quick": (256, 1024), "full": (1024, 4096, 16384)}
CONV = {"quick": ((8, 32, 32, 32),), "full": ((32, 64, 56, 56), (64, 128, 56, 56), (128, 256, 28, 28))}


def _ops():
    # Bytes per op for an n×n fp32 matrix: sum reads n² elements; the elementwise op reads n² and
    # writes n²; matmul does 2n³ flops on 3n² elements.
    return {
        "sum_rows": (lambda x, w: x.sum(1), lambda n: 4 * n * n),
        "sum_cols": (lambda x, w: x.sum(0), lambda n: 4 * n * n),
        "axpb": (lambda x, w: x * 2.0 + 1.0, lambda n: 8 * n * n),
        "add_rowmajor": (lambda x, w: x + w, lambda n: 12 * n * n),
        "matmul": (lambda x, w: x @ w, lambda n: 12 * n * n),
    }


LAYOUTS = {
    "rowmajor": ("optimized", lambda x: x),
    "colmajor": ("naive", lambda x: x.t().contiguous().t()),  # same values, transposed strides
    "colmajor_contiguous_first": ("library", None),  # the fix: .contiguous() inside the timed call
}


def pytest_generate_tests(metafunc):
    devices = options.devices(metafunc.config)
    profile = metafunc.config.getoption("--profile")
    if "layout_point" in metafunc.fixturenames:
        points, ids = [], []
        for device in devices:
            marks = [pytest.mark.gpu] if device == "cuda" else []
            for op in _ops():
                for layout in LAYOUTS:
                    for n in SIZES[profile]:
                        points.append(pytest.param((op, layout, n, device), marks=marks))
                        ids.append(f"{CASE_ID}-{op}-{layout}-n{n}-float32-{device}")
        metafunc.parametrize("layout_point", points, ids=ids)
    if "conv_point" in metafunc.fixturenames:
        points, ids = [], []
        for device in devices:
            marks = [pytest.mark.gpu] if device == "cuda" else []
            for fmt in ("contiguous", "channels_last"):
                for shape in CONV[profile]:
                    points.append(pytest.param((fmt, shape, device), marks=marks))
                    ids.append(f"{CASE_ID}-conv3x3-{fmt}-{'x'.join(map(str, shape))}-float32-{device}")
        metafunc.parametrize("conv_point", points, ids=ids)


def _skip_unmet(device):
    reason = requirements.unmet((), device)
    if reason:
        pytest.skip(reason)


def _time(benchmark, fn, device):
    fn()  # warm-up: allocator, oneDNN/cuBLAS kernel selection
    benchmark(measure.synchronized(fn, device))


def test_op_layout(layout_point, benchmark):
    op, layout, n, device = layout_point
    _skip_unmet(device)
    role, arrange = LAYOUTS[layout]
    f, nbytes = _ops()[op]
    (x,) = make_matrix({"n": n, "m": n}, torch.float32, torch.device(device), seed=0)
    (w,) = make_matrix({"n": n, "m": n}, torch.float32, torch.device(device), seed=1)
    if arrange is None:
        src = x.t().contiguous().t()
        call = functools.partial(lambda a, b: f(a.contiguous(), b), src, w)
    else:
        src = arrange(x)
        call = functools.partial(f, src, w)
    assert torch.equal(src, x) and (src.is_contiguous() == (layout == "rowmajor"))
    expected = f(x, w)
    got = call()
    # Same values, a different summation/GEMM order: fp32 rounding only.
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5 * (n if op == "matmul" else 1) ** 0.5 * 4)
    benchmark.group = f"{CASE_ID} {op} n{n} float32 {device}"
    benchmark.extra_info.update(
        case=CASE_ID,
        kind="layout_op",
        op=op,
        variant=layout,
        role=role,
        size={"n": n},
        size_label=f"{op}-n{n}",
        dtype="float32",
        device=device,
        tier=1,
        x="n",
        flops=2 * n**3 if op == "matmul" else None,
        bytes=nbytes(n),
    )
    _time(benchmark, call, device)


def test_conv_channels_last(conv_point, benchmark):
    fmt, (batch, channels, h, w), device = conv_point
    _skip_unmet(device)
    dev = torch.device(device)
    g = torch.Generator().manual_seed(0)
    conv = torch.nn.Conv2d(channels, 2 * channels, 3, padding=1)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=g) * 0.05)
    x = torch.randn((batch, channels, h, w), generator=g)
    expected = torch.nn.functional.conv2d(x.double(), conv.weight.double(), conv.bias.double(), padding=1)
    conv, x = conv.to(dev), x.to(dev)
    if fmt == "channels_last":
        conv, x = conv.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
        assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    call = functools.partial(conv, x)
    # fp32 means IEEE fp32 in both layouts, checked and timed: cuDNN would otherwise run it in
    # TF32 (its default), a 10-bit mantissa, and the layouts' errors and speeds would be TF32's.
    with torch.no_grad(), precision_flags.conv_precision(dev, reduced=False):
        got = call()
    err = measure.within_tol(got.cpu(), expected, conv_tolerance(channels))
    assert err.within, f"{fmt} conv off the float64 truth: {err.worst}"
    flops = 2 * batch * 2 * channels * h * w * channels * 9
    benchmark.group = f"{CASE_ID} conv3x3 {batch}x{channels}x{h}x{w} float32 {device}"
    benchmark.extra_info.update(
        case=CASE_ID,
        kind="layout_conv",
        op="conv3x3",
        variant=fmt,
        role="optimized" if fmt == "channels_last" else "naive",
        size={"batch": batch, "channels": channels, "hw": h},
        size_label=f"conv3x3-b{batch}-c{channels}-hw{h}",
        dtype="float32",
        device=device,
        tier=1,
        x="channels",
        flops=flops,
        bytes=None,
    )
    with torch.no_grad(), precision_flags.conv_precision(dev, reduced=False):
        _time(benchmark, call, device)
