"""The seeds-and-edges machinery, without running every variant (tests/integration/test_seeds_and_edges.py
runs them): a variant wrong on one seed or on strided input fails that seed or family only, a declared
failure must keep failing, and a family is drawn by the variant's own maker."""

from __future__ import annotations

import pytest
import torch

from cases.spec import InputFamily
from plan import VariantPoint
from tests.seeds_and_edges import FAILED, FINDING, PASSED, SEEDS, STALE, Outcome, outcomes
from tests.targets import doubling_point

# ---- the check itself can fail: a variant wrong only on one seed, or only on one family ---------


def _synthetic(fn, families=None) -> VariantPoint:
    return doubling_point(fn, "synthetic.edges", families)


def _by_what(point) -> dict[str, Outcome]:
    return {o.what: o for o in outcomes(point)}


def test_a_variant_wrong_on_one_seed_fails_that_seed_only():
    seed_2 = torch.randn(64, generator=torch.Generator().manual_seed(2))

    def variant(x):
        return 2 * x + 1e-3 if torch.equal(x, seed_2) else 2 * x

    found = _by_what(_synthetic(variant))
    assert found["seed 2"].outcome == FAILED and "output 0" in found["seed 2"].detail
    assert [found[f"seed {s}"].outcome for s in (1, 3)] == [PASSED, PASSED]


def _strided(x):
    return (torch.stack((x, x), 1)[:, 0],)  # the same values every second element


def test_a_variant_wrong_on_strided_input_fails_that_family():
    def variant(x):
        return 2 * x if x.is_contiguous() else 2 * x.flip(0)

    families = {"strided": InputFamily(_strided), "size_one": InputFamily(resize=lambda s: {"n": 1})}
    found = _by_what(_synthetic(variant, families))
    assert found["strided"].outcome == FAILED
    assert found["size_one"].outcome == PASSED  # a flip of one element is the element
    assert all(found[f"seed {s}"].outcome == PASSED for s in SEEDS)


def test_a_declared_failure_must_keep_failing():
    def variant(x):
        return 2 * x if x.is_contiguous() else 2 * x + 1

    wrong = InputFamily(_strided, fails={"v": "documented: strided input is off by one"})
    assert _by_what(_synthetic(variant, {"strided": wrong}))["strided"].outcome == FINDING
    assert _by_what(_synthetic(lambda x: 2 * x, {"strided": wrong}))["strided"].outcome == STALE


def test_a_family_is_drawn_by_the_variants_own_maker_at_its_size():
    def maker(size, dtype, device, seed):
        return (torch.ones(size["n"], size["m"], dtype=dtype),)

    family = InputFamily(lambda x: (x.t(),), resize=lambda s: {**s, "m": 1})
    (x,) = family.make(maker, {"n": 3, "m": 5}, torch.float16, "cpu", 0)
    assert x.shape == (1, 3) and x.dtype == torch.float16 and x.stride() == (1, 1)


def test_a_family_names_only_variants_of_its_comparison():
    with pytest.raises(ValueError, match="input family 'f'"):
        _synthetic(lambda x: 2 * x, {"f": InputFamily(fails={"nope": "no such variant"})})
    with pytest.raises(ValueError, match="input family 'f'"):
        _synthetic(lambda x: 2 * x, {"f": InputFamily(variants=("v",), fails={"w": "not in variants"})})
