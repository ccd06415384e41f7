"""The compiled-twin policy: which torch.compile twins a comparison's naive variants get (one per
mode, where the comparison times a pair) and the one size each twin is placed at (the largest
where its naive way fits the device). Which cases get twins at all is
harness.measure.compiled.compiled_cases; the expansion (`plan.expand`) places them.
"""

from __future__ import annotations

import dataclasses
import functools

import torch

from cases import get_case
from cases.spec import Comparison, Role, Variant
from harness.measure import compiled


@functools.lru_cache(maxsize=None)
def compiled_variants(case_id: str, part: str = "") -> dict[str, Variant]:
    """The compiled twins of a comparison's naive variants (`compiled_twins`), by name."""
    return {name: twin for name, (twin, _) in compiled_twins(case_id, part).items()}


@functools.lru_cache(maxsize=None)
def compiled_twins(case_id: str, part: str = "") -> dict[str, tuple[Variant, str]]:
    """name → (twin, the naive variant it compiles), where the comparison times a pair:
    ``compiled`` (torch.compile's default mode; ``compiled_<naive>`` when there are several naive
    variants) and ``<that>_max_autotune`` (CUDA, full profile). Same inputs, oracle and tolerance
    as the naive variant they compile, so they are checked and timed like any other variant."""
    case = get_case(case_id)
    comparison = case.parts[part] if part else case
    roles = {v.role for v in comparison.variants.values()}
    if Role.NAIVE not in roles or not roles & {Role.OPTIMIZED, Role.LIBRARY}:
        return {}
    naive_names = [n for n, v in comparison.variants.items() if v.role is Role.NAIVE]
    out = {}
    for name in naive_names:
        base = "compiled" if len(naive_names) == 1 else f"compiled_{name}"
        naive_variant = comparison.variants[name]
        for mode, suffix in ((compiled.DEFAULT, ""), (compiled.MAX_AUTOTUNE, "_max_autotune")):
            twin = dataclasses.replace(
                naive_variant,
                fn=compiled.Compiled(naive_variant.fn, mode),
                role=Role.COMPILED,
                requires=naive_variant.requires + ("compiler",),
            )
            out[base + suffix] = (twin, name)
    return out


def twin_size(comparison: Comparison, twin: Variant, sizes, device: str, capacity: int | None) -> int:
    """Index of the largest size at which the twin's naive way (whose memory estimate the twin
    inherits) can fit `capacity` bytes in the first dtype it runs in on `device`; the largest size
    where the capacity or the estimate is unknown. At a size where the naive way is always skipped
    as too big, its twin would be too, and there would be no naive time to compare it with."""
    dtypes = [d for d in comparison.dtypes.get(device, ()) if twin.dtypes is None or d in twin.dtypes]
    if capacity is None or twin.peak_bytes is None or not dtypes:
        return len(sizes) - 1
    itemsize = torch.empty((), dtype=dtypes[0]).element_size()
    fitting = [i for i, size in enumerate(sizes) if twin.peak_bytes(size, itemsize) <= capacity]
    return fitting[-1] if fitting else len(sizes) - 1
