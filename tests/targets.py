"""The variant targets of the generated checks: every variant of every comparison of every case
(all tiers and roles, in every dtype it runs on the CPU) at the quick profile's smallest size, on
the CPU, as the suite's own `VariantPoint`. The negative controls (`test_negative_controls.py`)
and the seeds and edge inputs (`test_seeds_and_edges.py`) run over the same list."""

from __future__ import annotations

import torch

from cases import all_cases
from cases.spec import Case, Tol, dtype_name, naive
from plan import VariantPoint


def variant_targets() -> list[VariantPoint]:
    points = []
    for case in all_cases():
        for part, comparison in case.comparisons().items():
            size = comparison.sizes_for("quick")[0]
            for name, variant in comparison.variants.items():
                for dtype in comparison.dtypes.get("cpu", ()):
                    if variant.dtypes is None or dtype in variant.dtypes:
                        points.append(VariantPoint(case, name, size, dtype, "cpu", part=part))
    return points


def name_of(point) -> str:
    """The variant's name within its case: ``part.variant``, or the variant's own."""
    return ".".join(p for p in (point.part, point.variant_name) if p)


def target_id(point) -> str:
    return f"{point.case.id}-{name_of(point)}-{dtype_name(point.dtype)}"


def doubling_point(fn, case_id: str, families=None) -> VariantPoint:
    """A one-variant case whose truth is 2·x (n = 64, fp32, CPU), for a stand-in `fn` that doubles
    its input right or wrongly: the suite's own check path fed a variant a test controls."""

    def make(size, dtype, device, seed):
        return (torch.randn(size["n"], generator=torch.Generator().manual_seed(seed)).to(dtype),)

    case = Case(
        id=case_id,
        tier=2,
        claim="",
        source="",
        make_inputs=make,
        variants={"v": naive(fn)},
        oracle=lambda x: 2 * x.double(),
        tolerance={torch.float32: Tol(rtol=2**-24)},  # 2·x is exact in fp32: one rounding at most
        sizes={"quick": [{"n": 64}]},
        input_families=families or {},
    )
    return VariantPoint(case, "v", {"n": 64}, torch.float32, "cpu")
