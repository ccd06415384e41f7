"""A point resolved into what the harness measures: its inputs and the oracle's truth from a cache
that keeps one (case, size, dtype, device) group at a time (`InputCache`), the size check against
the device's free memory (`oversize_reason`), and the callable, tolerance at this size, cost model
and recorded key of a variant or a pair (`variant_at`, `pair_at`).
"""

from __future__ import annotations

import torch

from cases.spec import Role, dtype_name, tolerance_at
from harness import measure
from harness.contract import record
from harness.measure import block_context
from harness.point.pair_benchmark import PairAtPoint
from harness.point.variant_benchmark import VariantAtPoint
from plan.points import PairPoint, VariantPoint


class InputCache:
    """Inputs and the oracle's truth for the point being run, reused by the next variants.

    Variants of one (case, size, dtype, device) run consecutively, and the float64 oracle is
    often the most expensive call in the test; only the current group is kept, to bound memory.
    """

    def __init__(self, seed: int):
        self.seed = seed
        self._group = None
        self._entries: dict = {}

    def enter(self, point: VariantPoint) -> None:
        """Make `point`'s group the current one: another group's inputs and truths are released
        first (so a memory budget read next sees their memory as free)."""
        group = (point.case.id, point.size_label, point.dtype, point.device)
        if group != self._group:
            self._entries.clear()
            measure.free_memory(point.device, full=False)
            self._group = group

    def get(self, point: VariantPoint):
        self.enter(point)
        maker = point.input_maker
        if maker not in self._entries:
            self._entries[maker] = (point.make_inputs(self.seed), {})
        inputs, truths = self._entries[maker]
        if point.oracle not in truths:
            truths[point.oracle] = point.oracle(*inputs)
        return inputs, truths[point.oracle]

    def clear(self):
        self._entries.clear()
        self._group = None


def oversize_reason(point: VariantPoint, input_cache: InputCache) -> str | None:
    """Why a size cannot be tried (its estimated working set does not fit the device), or None.
    The previous group's inputs and truths are released before the device's free memory is read."""
    if point.variant.peak_bytes is None:
        return None
    input_cache.enter(point)
    need = point.variant.peak_bytes(point.size, torch.empty((), dtype=point.dtype).element_size())
    budget = measure.memory_budget(point.device)
    if need > budget:
        # Before a size is given up, every collectable byte back (a full collection, only here).
        measure.free_memory(point.device)
        budget = measure.memory_budget(point.device)
    if need > budget:
        return f"needs ~{need / 2**30:.1f} GiB, over this device's budget of {budget / 2**30:.1f} GiB"
    return None


def variant_at(point: VariantPoint, input_cache: InputCache) -> VariantAtPoint:
    """The point resolved into what the harness measures: its callable, tolerance at this size,
    inputs from the cache, and the cost model of this variant."""
    comparison, variant = point.comparison, point.variant
    itemsize = torch.empty((), dtype=point.dtype).element_size()
    twin = variant.role is Role.COMPILED
    compiles = point.compiled_from if twin else None  # a twin always names it (compiled_twins)
    flops = comparison.flops_of(variant, point.size)
    bytes_moved = comparison.bytes_of(variant, point.size, itemsize)
    mode = point.key.timing_mode  # "" for warm
    return VariantAtPoint(
        id=point.id,
        fn=variant.fn,
        device=point.device,
        dtype=point.dtype,
        tolerance=tolerance_at(point.tolerance, point.size),
        inputs=lambda: input_cache.get(point),
        mode=point.timing,
        compiles=compiles,
        not_compilable=comparison.uncompilable.get(compiles) if twin else None,
        # A case's metrics describe its own eager variants (checkpoint's saved activations by
        # segment count); a twin's compiled graph is not what they measure.
        metrics=None
        if comparison.metrics is None or twin
        else (lambda inputs, device: comparison.metrics(point.variant_name, inputs, device)),
        flops=flops,
        bytes_moved=bytes_moved,
        group=f"{point.case.id} {point.size_label} {dtype_name(point.dtype)} {point.device}"
        + (f" {mode}" if mode else ""),
        recorded=record.BenchmarkInfo.of(
            point.key, tier=point.case.tier, x=comparison.x_axis, flops=flops, bytes=bytes_moved
        ).to_data()
        | ({"timing_mode": mode} if mode else {}),
    )


def pair_at(point: PairPoint, input_cache: InputCache) -> PairAtPoint:
    return PairAtPoint(
        key=point.key,
        fast=point.fast,
        slow=point.slow,
        sides={side.variant_name: variant_at(side, input_cache) for side in point.sides},
        against=point.against,
        x=point.comparison.x_axis,
    )


def fresh_build(
    case_id: str, part: str, variant_name: str, size: dict, dtype: torch.dtype, device: str, seed: int
):
    """In a fresh process (harness.measure.faulted_pages): the point rebuilt from its picklable
    description, its inputs made there, and its bare call with its block context
    (harness.measure.block_context.entered). No oracle: nothing is checked there, only timed; the
    suite checked the same call on the same inputs (same seed) before."""
    from cases import declared_case

    point = VariantPoint(declared_case(case_id), variant_name, size, dtype, device, part=part)
    return block_context.entered(point.variant.fn, point.make_inputs(seed))


def fresh_spec(point: VariantPoint, seed: int) -> tuple:
    """`fresh_build`'s arguments for `point`."""
    return (point.case.id, point.part, point.variant_name, dict(point.size), point.dtype, point.device, seed)
