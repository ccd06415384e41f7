"""The machine's noise floor: how large a gain one computation shows against itself.

Timed as both sides of an interleaved pair (harness.measure.interleave), an identical computation should
give a ratio of 1; how far its 95% interval strays from 1 is the smallest gain this machine can
tell from noise right now (harness.contract.gain.noise_floor). The catalogue's δ is at least this, and
never below 5% (harness.contract.gain.delta). The work is a 256² fp32 matmul and an in-place add, about a
millisecond on 2 CPU cores: multi-threaded, as most timed variants are, and short enough that
0.5 s gives a few hundred paired rounds. It is timed as the pairs are, on the device's clock
(harness.measure.device), so the floor is the noise of the figures it judges.
"""

from __future__ import annotations

import math

import torch

from harness.contract import gain, rounds
from harness.host import load
from harness.measure import device as harness_device
from harness.measure import interleave

CAP_S = 0.5
MIN_ROUNDS = 100


def measured(device: str) -> dict:
    """{"floor": fraction or None, "rounds": paired rounds, "load": the load right after,
    "timer": the clock that timed them}."""
    dev = harness_device.of(device)
    g = torch.Generator(device=dev.torch_device).manual_seed(0)
    a = torch.randn(256, 256, device=dev.torch_device, generator=g)

    def work():
        return (a @ a).add_(1.0)

    # Rounds well past the precision target: the floor is the interval's width itself, and a
    # handful of rounds would report the width of a small sample, not the machine's noise.
    # Rounds as long as a pair's on the device (the CPU's: as before).
    kind = torch.device(device).type
    with load.stretch() as over:
        paired = interleave.timed_pair(
            {"a": work, "b": work},
            cap_s=CAP_S,
            min_rounds=MIN_ROUNDS,
            min_round_s=rounds.MIN_ROUND_S.get(kind, rounds.MIN_ROUND_S["cpu"]),
            clock=dev.clock(),
        )
    floor = gain.noise_floor(paired.seconds["a"], paired.seconds["b"])
    return {
        "floor": None if math.isnan(floor) else floor,
        "rounds": len(paired.first),
        "load": over.load.to_data(),
        "timer": dev.timer_name,
    }
