"""cases/_lib/inputs.py: a seeded generator on the device draws the same stream every time, and
`strided` keeps the values while leaving every memory format."""

from __future__ import annotations

import torch

from cases._lib.inputs import generator, strided


def test_a_seed_draws_the_same_stream_and_another_seed_another():
    a = torch.randn(5, generator=generator("cpu", 3))
    assert torch.equal(a, torch.randn(5, generator=generator("cpu", 3)))
    assert not torch.equal(a, torch.randn(5, generator=generator("cpu", 4)))


def test_strided_keeps_the_values_every_second_element_of_a_buffer():
    t = torch.arange(12.0).reshape(3, 4)
    s = strided(t)
    assert torch.equal(s, t) and s.stride(-1) == 2
    assert not s.is_contiguous()
    image = strided(torch.randn(2, 3, 4, 5))
    assert not image.is_contiguous() and not image.is_contiguous(memory_format=torch.channels_last)


def test_sizes_zero_and_one_stay_as_they_are():
    assert strided(torch.ones(3, 1)).shape == (3, 1) and strided(torch.ones(3, 0)).shape == (3, 0)
