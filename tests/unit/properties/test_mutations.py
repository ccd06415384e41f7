"""A 1e-4 relative bias in any Tier-1/2 optimized or library fp32 variant must fail its check.

Each variant is run twice on the quick profile's smallest size, on the CPU, through the suite's own
path (`VariantPoint`'s inputs, oracle and tolerance at that size, `measure.within_tol`): as written,
where it must pass, and with every output multiplied by (1 + 1e-4), where it must not. A bound that
lets the bias through is either too wide or taken from another variant's scale.

Integer outputs are biased as integers would be (rounded, clamped to the dtype), booleans not at
all: a relative bias of a truth value means nothing. A variant whose dtype's own error, or whose
discrete result, cannot show 1e-4 is listed in `EXEMPT` with the reason and the smallest bias its
check does catch, and that smaller claim is tested instead.
"""

from __future__ import annotations

import pytest
import torch

from cases import all_cases
from cases.spec import PROFILES, Role, Tol, tolerance_at
from harness import measure
from harness.machine import requirements
from plan import InputCache, VariantPoint

BIAS = 1e-4
FP32 = torch.float32

# (case, variant) → (smallest bias its check catches, why 1e-4 cannot be). Each entry is tested
# both ways: 1e-4 passes unseen (else the entry is stale and must go), the stated bias fails.
EXEMPT = {
    ("precision.tf32", "matmul.high"): (
        3e-2,
        "held to the TF32/bf16 bound on purpose (on CUDA 'high' is TF32; the CPU's reduced mode is "
        "bf16): 2u_bf16 relative + 4u_bf16 of max|truth| = 2.3e-2 at the largest output",
    ),
    ("precision.tf32", "matmul.medium"): (
        3e-2,
        "bf16 products on the CPU, TF32 on CUDA, on purpose: the bound is 2.3e-2 at the largest "
        "output, and bf16's own error there is 0.7u_bf16 = 2.6e-3",
    ),
    ("precision.tf32", "conv.reduced"): (
        3e-2,
        "cuDNN TF32 / oneDNN bf16 convolution on purpose: the same reduced-precision bound, 2.3e-2 "
        "at the largest output",
    ),
    ("data.recordio", "recordio_random"): (
        4e-3,
        "bytes (uint8), compared exactly: a relative bias b moves a byte v only once b·v ≥ 0.5, so "
        "nothing below 0.5/255 = 2e-3 exists in the output; at 4e-3 every byte ≥ 125 moves",
    ),
    ("data.recordio", "recordio_sequential"): (
        4e-3,
        "bytes (uint8), compared exactly: as recordio_random",
    ),
    ("onehot.encode", "one_hot"): (
        0.5,
        "F.one_hot returns int64 0/1, compared exactly: an entry 1 becomes 2 only at b ≥ 0.5; any "
        "misplaced or missing 1 fails",
    ),
}


def _targets() -> list[VariantPoint]:
    points = []
    for case in all_cases():
        for part, comparison in case.comparisons().items():
            if case.tier not in (1, 2) or FP32 not in comparison.dtypes.get("cpu", ()):
                continue
            sizes = comparison.sizes_for("quick")
            for name, variant in comparison.variants.items():
                if variant.role is Role.NAIVE or (variant.dtypes is not None and FP32 not in variant.dtypes):
                    continue
                points.append(VariantPoint(case, name, sizes[0], FP32, "cpu", part=part))
    return points


TARGETS = _targets()
# As the suite runs them: a group's inputs and truth made once, for its variants in turn (data.loading
# writes 2,000 sample files per set of inputs: 1-2 s each time on this machine's disk).
INPUTS = InputCache(seed=0)


def biased(result, bias: float):
    """`result` (a tensor or a tuple of them) with every output scaled by (1 + bias)."""
    if isinstance(result, (tuple, list)):
        return type(result)(biased(r, bias) for r in result)
    if result.dtype == torch.bool:
        return result
    if result.is_floating_point() or result.is_complex():
        return result * (1 + bias)
    info = torch.iinfo(result.dtype)
    scaled = (result.double() * (1 + bias)).round().clamp(info.min, info.max)
    return scaled.to(result.dtype)


def _outputs(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _name(point) -> str:
    return ".".join(p for p in (point.part, point.variant_name) if p)


@pytest.mark.parametrize("point", TARGETS, ids=[f"{p.case.id}-{_name(p)}" for p in TARGETS])
def test_bias_fails_the_check(point):
    reason = requirements.unmet(point.requires, point.device)
    if reason:
        pytest.skip(reason)
    tol = tolerance_at(point.tolerance, point.size)
    inputs, truth = INPUTS.get(point)
    got = point.variant.fn(*inputs)
    clean = measure.within_tol(got, truth, tol)
    assert clean.within, f"unmutated {point.id} fails its own check: {clean.worst}"

    key = (point.case.id, _name(point))
    smallest = EXEMPT[key][0] if key in EXEMPT else BIAS
    mutated = biased(got, smallest)
    assert any(not torch.equal(a, b) for a, b in zip(_outputs(mutated), _outputs(got))), (
        f"a bias of {smallest:g} changes no output of {point.id}: say why in EXEMPT"
    )
    caught = measure.within_tol(mutated, truth, tol)
    assert not caught.within, (
        f"{point.id}: outputs biased by {smallest:g} relative pass the check "
        f"({tol}; max rel {caught.max_rel:.3g})"
    )
    if key in EXEMPT:
        unseen = measure.within_tol(biased(got, BIAS), truth, tol)
        assert unseen.within, f"{point.id} catches a {BIAS:g} bias after all: drop it from EXEMPT"


def test_exemptions_name_real_targets():
    names = {(p.case.id, _name(p)) for p in TARGETS}
    assert set(EXEMPT) <= names, f"EXEMPT lists variants that are not targets: {set(EXEMPT) - names}"


def test_every_declared_tolerance_is_a_tol_at_every_size():
    """Bounds declared as functions of the size must resolve at every size of every profile."""
    for case in all_cases():
        for comparison in case.comparisons().values():
            variants = comparison.variants.values()
            declared = [comparison.tolerance] + [v.tolerance for v in variants if v.tolerance]
            for profile in PROFILES:
                for size in comparison.sizes_for(profile):
                    for mapping in declared:
                        for dtype, tol in mapping.items():
                            assert isinstance(tolerance_at(tol, size), Tol), (case.id, dtype, size)


def test_bias_of_integer_and_boolean_outputs():
    ints, flags, floats = torch.tensor([0, 1, 255], dtype=torch.uint8), torch.tensor([True]), torch.ones(2)
    out = biased((ints, flags, floats), 4e-3)
    assert out[0].tolist() == [0, 1, 255] and out[1].tolist() == [True]
    byte = torch.tensor([125], dtype=torch.uint8)
    assert torch.equal(biased(byte, 4e-3), byte + 1)
    assert torch.allclose(out[2], torch.full((2,), 1.004))
