"""A point, one frozen key each (plan/points.py): a variant at one size, dtype, device and timing
mode; its pytest id and its record key say the same point, and a timing mode changes both."""

from __future__ import annotations

import dataclasses

from plan import expand


def test_a_variant_points_key_names_what_it_measures():
    point = expand.variant_points("quick", ["cpu"])[0]
    key = point.key
    assert (key.case, key.kind, key.name, key.device) == (point.case.id, "variant", point.variant_name, "cpu")
    assert key.size_label == point.size_label and key.dtype == str(point.dtype).removeprefix("torch.")
    assert point.case.id in point.id


def test_a_timing_mode_is_another_point():
    point = next(p for p in expand.variant_points("quick", ["cuda"]) if p.variant.role.value != "compiled")
    cold = dataclasses.replace(point, timing="cold_l2")
    assert cold.id != point.id and cold.id.endswith("cold_l2")
    assert cold.key.timing_mode != point.key.timing_mode


def test_a_pair_and_a_check_point_name_their_sides_and_check():
    pair = expand.pair_points("quick", ["cpu"])[0]
    assert pair.key.kind == "pair" and "/" in pair.key.name
    check = expand.check_points(["cpu"])[0]
    assert check.key.kind == "check" and check.key.name in check.case.checks
