"""harness.host.allocator: inside `perturbed`, memory handed out uninitialised never holds what was freed
(the stale-buffer negative control). The pinned thresholds, in worker processes, are in
tests/integration/test_allocator.py."""

from __future__ import annotations

import platform

import pytest
import torch

from harness.host import allocator

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's")


def test_perturbed_hands_out_a_pattern_never_the_freed_answer():
    # Past glibc's tcache (≤ 1 KiB, which can skip the fill: harness.measure.poison_recycled's
    # part): a small-bin, a large-bin and a 4 MiB block.
    for n in (512, 16384, 2**20):
        right = torch.randn(n)
        del right  # freed: the next block of this size is likely the same memory, answer and all
        with allocator.perturbed() as on:
            out = torch.empty(n)
        assert on
        assert bool((out.view(torch.uint8) == 0xFE).all()), n  # -1.7e38 in every element
