"""The judges of `cases/conv/shapes.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import torch

from cases.conv import shapes
from harness.contract.record import Verdict


def test_equivariance_depends_names_its_condition():
    bound = 1e-5
    f = shapes.judge_equivariance(0.0, 1.3, 0.0, 0.0, 3.0, bound)
    assert f.verdict is Verdict.DEPENDS and "condition: the padding mode and the stride" in f.evidence
    assert shapes.judge_equivariance(0.0, 0.0, 0.0, 0.0, 0.0, bound).verdict is Verdict.HOLDS


# ---- conv.shapes --------------------------------------------------------------------------------------


def test_output_size_holds_on_the_layers_and_fails_where_a_formula_is_off():
    assert shapes.judge_output_size(210, [], [], 102, 60).verdict is Verdict.HOLDS
    assert shapes.judge_output_size(210, [(7, 3, 0, 1, 1, 6, 7)], [], 102, 60).verdict is Verdict.FAILS
    assert shapes.judge_output_size(210, [], [(7, 3, 0, 1, 6)], 102, 60).verdict is Verdict.FAILS


def test_same_padding_and_weight_shapes_are_computed():
    kept = {1: True, 3: True, 2: True}
    assert shapes.judge_same_padding(kept, {3: (0.0, 4e-5)}, "not supported").verdict is Verdict.HOLDS
    assert shapes.judge_same_padding(kept, {3: (1e-3, 4e-5)}, "not supported").verdict is Verdict.FAILS
    assert shapes.judge_same_padding({**kept, 2: False}, {}, "not supported").verdict is Verdict.FAILS
    assert shapes.judge_same_padding(kept, {}, "").verdict is Verdict.FAILS
    good = {"Conv2d": ((8, 3, 3, 5), (8, 3, 3, 5))}
    context = {"Conv2d(groups=2)": (8, 2, 3, 3)}
    assert shapes.judge_weight_shapes(good, context).verdict is Verdict.HOLDS
    # An (in, out) order, a transposed conv's, is what a wrong statement would meet.
    assert shapes.judge_weight_shapes({"Conv2d": ((3, 8, 3, 5), (8, 3, 3, 5))}, {}).verdict is Verdict.FAILS
    assert shapes.judge_weight_shapes({}, context).verdict is Verdict.FAILS


def test_vgg16_table_fails_where_its_numbers_are_not_its_networks():
    wrong = [(1, (112, 112, 128), (112, 112, 64)), (3, (28, 32, 512), (28, 28, 256))]
    f = shapes.judge_vgg16(wrong, 17, 138_505_000, 138_357_544, True)
    assert f.verdict is Verdict.FAILS and f.errata == ()
    assert "the network gives (28, 28, 256)" in f.evidence and "17 weight layers" in f.evidence
    assert shapes.judge_vgg16([], 17, 138_505_000, 138_357_544, True).verdict is Verdict.FAILS  # 3× conv3-128
    assert shapes.judge_vgg16(wrong, 16, 138_357_544, 138_357_544, True).verdict is Verdict.FAILS
    assert shapes.judge_vgg16([], 16, 138_357_544, 138_357_544, True).verdict is Verdict.HOLDS
    assert shapes.judge_vgg16([], 16, 138_357_544, 1, False).verdict is Verdict.FAILS  # reference off


def test_formula_pooled_shapes_are_vgg16s():
    pooled = shapes.formula_pooled_shapes(shapes.VGG16_CFG)
    assert pooled == ((112, 112, 64), (56, 56, 128), (28, 28, 256), (14, 14, 512), (7, 7, 512))


def test_equivariance_depends_on_padding_and_stride_and_fails_where_even_circular_breaks():
    bound = 4e-5
    f = shapes.judge_equivariance(0.0, 1.3, 0.0, 0.0, 3.0, bound)
    assert f.verdict is Verdict.DEPENDS and "circular" in f.evidence and "stride" in f.evidence
    assert shapes.judge_equivariance(0.0, 0.0, 0.0, 0.0, 0.0, bound).verdict is Verdict.HOLDS
    assert shapes.judge_equivariance(0.0, 1.3, 0.0, 0.0, 0.0, bound).verdict is Verdict.DEPENDS  # padding
    assert shapes.judge_equivariance(0.0, 0.0, 0.0, 0.0, 3.0, bound).verdict is Verdict.DEPENDS  # stride
    assert shapes.judge_equivariance(0.5, 1.3, 0.0, 0.0, 3.0, bound).verdict is Verdict.FAILS
    assert shapes.judge_equivariance(0.0, 1.3, 0.5, 0.0, 3.0, bound).verdict is Verdict.FAILS


def test_padding_mode_as_a_fill_number_fails():
    exact = {"zeros": 0.0, "reflect": 0.0, "replicate": 0.0, "circular": 0.0}
    copied = {"zeros": True, "reflect": False, "replicate": False, "circular": False}
    refused = "ValueError: padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}"
    f = shapes.judge_padding_modes(exact, copied, refused)
    assert f.verdict is Verdict.FAILS and f.errata == () and "value=c" in f.evidence
    # A torch where padding_mode took a number and filled with it: the notes would be right.
    filled = {m: True for m in copied}
    assert shapes.judge_padding_modes(exact, filled, "").verdict is Verdict.HOLDS
    assert shapes.judge_padding_modes(exact, copied, "").verdict is Verdict.FAILS
    assert shapes.judge_padding_modes(exact, filled, refused).verdict is Verdict.FAILS


def test_observed_vgg_and_padding_mode_fail():
    cpu = torch.device("cpu")
    assert shapes.check_vgg16(cpu).verdict is Verdict.FAILS
    assert shapes.check_padding_modes(cpu).verdict is Verdict.FAILS
    assert shapes.check_weight_shapes(cpu).verdict is Verdict.HOLDS


def test_stacked_3x3_field_and_parameters_are_measured():
    extents = {"2×3×3": 5, "5×5": 5, "3×3×3": 7, "7×7": 7}
    counts = {"2×3×3": 73_856, "5×5": 102_464, "3×3×3": 110_784, "7×7": 200_768}
    assert shapes.judge_stacked_3x3(extents, counts, 64).verdict is Verdict.HOLDS
    assert shapes.judge_stacked_3x3({**extents, "2×3×3": 3}, counts, 64).verdict is Verdict.FAILS
    assert shapes.judge_stacked_3x3(extents, {**counts, "2×3×3": 200_000}, 64).verdict is Verdict.FAILS
