"""cases/_lib/conv.py: the output-length formula and the float64 tap loop agree with torch's
convolution, and the measured receptive field is what the layers' geometry gives."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cases._lib import conv


@pytest.mark.parametrize("stride, padding, dilation", [(1, 0, 1), (2, 1, 1), (1, 2, 2), (3, 0, 2)])
def test_the_tap_loop_is_torchs_convolution_in_float64(stride, padding, dilation):
    size = {"b": 2, "c": 3, "o": 4, "k": 3, "h": 9}
    x, w, b = conv.conv_params(size, torch.float32, "cpu", torch.Generator().manual_seed(0))
    got = conv.conv_float64(x, w, b, stride, padding, dilation)
    want = F.conv2d(x.double(), w.double(), b.double(), stride=stride, padding=padding, dilation=dilation)
    assert got.dtype == torch.float64 and got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert got.shape[-1] == conv.taps(9, 3, stride, padding, dilation)


def test_the_flops_count_the_taps_at_input_resolution():
    assert conv.conv_flops({"b": 2, "o": 4, "c": 3, "k": 3, "h": 5}) == 2 * 2 * 4 * 3 * 9 * 25


def test_the_receptive_field_of_a_stack_is_measured():
    assert conv.gradient_support([(3, 1, 1)]) == (3, 0, 9)
    assert conv.gradient_support([(3, 1, 1), (3, 1, 1)]) == (5, 0, 25)
    extent, holes, area = conv.gradient_support([(3, 1, 2)])  # one dilated 3x3: 5x5 with 16 holes
    assert (extent, holes, area) == (5, 16, 25)


def test_the_families_leave_the_layout_and_keep_the_values():
    size = {"b": 2, "c": 3, "o": 4, "k": 3, "h": 6}
    x, w, b = conv.conv_params(size, torch.float32, "cpu", torch.Generator().manual_seed(1))
    last, *rest = conv.INPUT_FAMILIES["channels_last_input"].transform(x, w, b)
    assert last.is_contiguous(memory_format=torch.channels_last) and torch.equal(last, x)
    assert rest[0] is w and rest[1] is b
    assert conv.INPUT_FAMILIES["batch_of_one"].size_of(size)["b"] == 1
