"""Parametrisation of the suite: case × variant × size × dtype × device, and case × check × device.

Every node ID starts with the catalogue ID (``test_check[distance.pairwise-matmul-n1024-...]``),
so ``-k distance.pairwise`` selects one technique.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from cases import all_cases
from cases.spec import Case, Check, Size, Variant, dtype_name, size_label
from harness import measure
from suite import options


@dataclass(frozen=True, eq=False)
class VariantPoint:
    case: Case
    variant_name: str
    size: Size
    dtype: torch.dtype
    device: str

    @property
    def variant(self) -> Variant:
        return self.case.variants[self.variant_name]

    @property
    def requires(self):
        return self.case.requires + self.variant.requires

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.variant_name}-{size_label(self.size)}-{dtype_name(self.dtype)}-{self.device}"

    @property
    def tolerance(self):
        return self.case.tolerance[self.dtype]

    def make_inputs(self, seed: int) -> tuple:
        maker = self.variant.inputs or self.case.make_inputs
        return maker(self.size, self.dtype, torch.device(self.device), seed)

    def describe(self) -> dict:
        return {
            "case": self.case.id, "kind": "variant", "variant": self.variant_name,
            "role": self.variant.role.value, "size": dict(self.size), "size_label": size_label(self.size),
            "dtype": dtype_name(self.dtype), "device": self.device,
        }


@dataclass(frozen=True, eq=False)
class CheckPoint:
    case: Case
    check_name: str
    device: str

    @property
    def check(self) -> Check:
        return self.case.checks[self.check_name]

    @property
    def requires(self):
        return self.case.requires + self.check.requires

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.check_name}-{self.device}"

    def describe(self) -> dict:
        return {"case": self.case.id, "kind": "check", "check": self.check_name, "device": self.device}


def variant_points(profile: str, devices) -> list[VariantPoint]:
    points = []
    for case in all_cases():
        for size in case.sizes_for(profile):
            for device in devices:
                for dtype in case.dtypes.get(device, ()):
                    for name, variant in case.variants.items():
                        if variant.dtypes is None or dtype in variant.dtypes:
                            points.append(VariantPoint(case, name, size, dtype, device))
    return points


def check_points(devices) -> list[CheckPoint]:
    return [
        CheckPoint(case, name, device)
        for case in all_cases()
        for name, check in case.checks.items()
        for device in devices
        if device in check.devices
    ]


def pytest_generate_tests(metafunc):
    devices = options.devices(metafunc.config)
    if "variant_point" in metafunc.fixturenames:
        points = variant_points(metafunc.config.getoption("--profile"), devices)
        metafunc.parametrize("variant_point", points, ids=[p.id for p in points])
    if "check_point" in metafunc.fixturenames:
        points = check_points(devices)
        metafunc.parametrize("check_point", points, ids=[p.id for p in points])


class InputCache:
    """Inputs and the oracle's truth for the point being run, reused by the next variants.

    Variants of one (case, size, dtype, device) run consecutively, and the float64 oracle is
    often the most expensive call in the test; only the current group is kept, to bound memory.
    """

    def __init__(self, seed: int):
        self.seed = seed
        self._group = None
        self._entries: dict = {}

    def get(self, point: VariantPoint):
        group = (point.case.id, size_label(point.size), point.dtype, point.device)
        if group != self._group:
            self._entries.clear()
            measure.free_memory(point.device)
            self._group = group
        maker = point.variant.inputs or point.case.make_inputs
        if maker not in self._entries:
            inputs = point.make_inputs(self.seed)
            self._entries[maker] = (inputs, point.case.oracle(*inputs))
        return self._entries[maker]

    def clear(self):
        self._entries.clear()
        self._group = None


@pytest.fixture(scope="session")
def input_cache(request):
    cache = InputCache(request.config.getoption("--seed"))
    yield cache
    cache.clear()


def skip_if_too_big(point: VariantPoint) -> None:
    """Skip, with the reason, a size whose estimated working set does not fit: never try it."""
    if point.variant.peak_bytes is None:
        return
    need = point.variant.peak_bytes(point.size, torch.empty((), dtype=point.dtype).element_size())
    budget = measure.memory_budget(point.device)
    if need > budget:
        pytest.skip(f"needs ~{need / 2**30:.1f} GiB, over this device's budget of {budget / 2**30:.1f} GiB")
