"""Fake CUDA variants for `tests.fake_device.FakeDevice`: kernels that move its clock, a pair
of them at one point, and a host-bound side (several small launches the host issues slower than
the device runs them), so the GPU-only paths run on a CPU machine."""

from __future__ import annotations

import dataclasses

import torch

from cases.spec import Tol
from harness.contract import record
from harness.point import pair_benchmark
from harness.point.variant_benchmark import VariantAtPoint

KEY = record.PointKey(
    case="distance.pairwise",
    kind="pair",
    name="matmul/broadcast",
    device="cuda",
    size={"n": 1024},
    size_label="n1024",
    dtype="float32",
)
# The distance matmul at n = 1024 on an H100 (tests/data/h100_timing_modes.log):
# 6 launches, ~36 µs of GPU work (a graph replay read 39.6 µs), ~75 µs of host issue; the
# broadcast is 47x its GPU time.
LAUNCHES, LAUNCH_S, ISSUE_S = 6, 6e-6, 12.5e-6


def kernel(fake, seconds: float, out):
    """A fake variant: its 'kernel' takes `seconds` of device time and returns `out` at once."""

    def call(*args):
        fake.advance(seconds)
        fake.log.append("call")
        return out

    return call


def launches(fake, kernels: int, kernel_s: float, host_s: float, out):
    """A fake variant of `kernels` launches of `kernel_s` each, each issued in `host_s` of host time."""

    def call(*args):
        for _ in range(kernels):
            fake.launch(kernel_s, host_s=host_s)
        fake.log.append("call")
        return out

    return call


def pair(fake, fast_s: float, slow_s: float) -> pair_benchmark.PairAtPoint:
    """distance.pairwise at n = 1024 on the fake: matmul one kernel of `fast_s`, broadcast one of `slow_s`."""
    x = torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
    truth = x.double()

    def side(name, seconds):
        return VariantAtPoint(
            id=name,
            fn=kernel(fake, seconds, x.clone()),
            device="cuda",
            dtype=torch.float32,
            tolerance=Tol(rtol=1e-6, atol=1e-6),
            inputs=lambda: ((x,), truth),
        )

    return pair_benchmark.PairAtPoint(
        key=KEY,
        fast="matmul",
        slow="broadcast",
        sides={"matmul": side("matmul", fast_s), "broadcast": side("broadcast", slow_s)},
    )


def host_bound_pair(fake) -> pair_benchmark.PairAtPoint:
    """The pair with a host-bound fast side (LAUNCHES small launches issued at ISSUE_S each: 75 µs
    of host time for 36 µs of GPU work) against a GPU-bound slow side 47x its GPU time."""
    gpu_s = LAUNCHES * LAUNCH_S
    base = pair(fake, gpu_s, 47 * gpu_s)
    out = base.sides["matmul"].inputs()[0][0].clone()
    fast = dataclasses.replace(base.sides["matmul"], fn=launches(fake, LAUNCHES, LAUNCH_S, ISSUE_S, out))
    slow = dataclasses.replace(base.sides["broadcast"], fn=launches(fake, 1, 47 * gpu_s, ISSUE_S, out))
    return dataclasses.replace(base, sides={"matmul": fast, "broadcast": slow})
