"""Seeded inputs drawn on the device that uses them.

A full-profile input drawn on the CPU and copied to a GPU costs seconds (CPU randn is ~6 ns per
element on one thread: 7-24 s for a 32768² matrix), and so does any work done on it there (masks,
softmax of logits). Drawn on the device, it costs milliseconds. On the CPU the generator is the one
the makers used before, so CPU inputs, and every CPU figure, stay bit for bit what they were; a GPU
draws another stream (Philox), so GPU inputs differ from the CPU's (same distribution).
"""

from __future__ import annotations

import torch


def generator(device: torch.device | str, seed: int) -> torch.Generator:
    """A generator on `device` seeded with `seed`: pass it together with ``device=`` to the ops
    that create the tensors (a generator must live on the device it creates on)."""
    return torch.Generator(device=device).manual_seed(seed)


def strided(t: torch.Tensor) -> torch.Tensor:
    """The same values as `t`, stored every second element of a buffer twice its size: a view
    whose last stride is 2, contiguous in no memory format (an edge input for kernels that
    special-case row-major or channels_last). Sizes 0 and 1 stay as they are: nothing to skip."""
    return torch.stack((t, t), -1)[..., 0]
