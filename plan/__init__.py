"""The plan: every point a run measures, as plain data, and what each point needs to run.

A point is one thing the suite does once: check a variant (`VariantPoint`, also timed alone by
pytest-benchmark), time two variants against each other in alternating rounds (`PairPoint`), run
a rule check (`CheckPoint`) or launch worker processes (`LaunchPoint`). The expansion over case ×
part × variant × size × dtype × device × timing mode, the compiled-twin policy, the input cache
and the size check live here; `suite/conftest.py` only parametrises the tests from this plan.

Every node ID starts with the catalogue ID (``test_check[distance.pairwise-matmul-n1024-...]``),
so ``-k distance.pairwise`` selects one technique. Plain Python: no pytest.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from cases import all_cases, get_case
from cases.spec import Case, Check, Comparison, Role, Size, Variant, dtype_name, size_label, tolerance_at
from harness.measure import compiled
from harness.contract import declared, record, rules
from harness import measure
from harness.point.pair_benchmark import PairAtPoint
from harness.point.variant_benchmark import VariantAtPoint


@dataclass(frozen=True, eq=False)
class VariantPoint:
    case: Case
    variant_name: str
    size: Size
    dtype: torch.dtype
    device: str
    timing: str = "warm"  # GPU timing mode (harness.measure.timing); only test_benchmark varies it
    part: str = ""  # one of the case's parts, "" for its own comparison

    @property
    def comparison(self) -> Comparison:
        return self.case.parts[self.part] if self.part else self.case

    @property
    def variant(self) -> Variant:
        if self.variant_name in self.comparison.variants:
            return self.comparison.variants[self.variant_name]
        return compiled_variants(self.case.id, self.part)[self.variant_name]

    @property
    def size_label(self) -> str:
        """The size, after the part's name: a report groups by (case, size label), and two parts'
        variants are never compared."""
        label = size_label(self.size)
        return f"{self.part}-{label}" if self.part else label

    @property
    def requires(self):
        return self.case.requires + self.variant.requires

    @property
    def id(self) -> str:
        base = "-".join(
            p
            for p in (
                self.case.id,
                self.part,
                self.variant_name,
                size_label(self.size),
                dtype_name(self.dtype),
            )
            if p
        )
        base += f"-{self.device}"
        return base if self.timing == "warm" else f"{base}-{self.timing}"

    @property
    def tolerance(self):
        return (self.variant.tolerance or {}).get(self.dtype) or self.comparison.tolerance[self.dtype]

    @property
    def oracle(self):
        return self.variant.oracle or self.comparison.oracle

    @property
    def input_maker(self):
        return self.variant.inputs or self.comparison.make_inputs

    def make_inputs(self, seed: int) -> tuple:
        return self.input_maker(self.size, self.dtype, torch.device(self.device), seed)

    @property
    def compiled_from(self) -> str:
        """The naive variant this one compiles; "" for any other variant."""
        if self.variant_name in self.comparison.variants:
            return ""
        return compiled_twins(self.case.id, self.part)[self.variant_name][1]

    @functools.cached_property
    def key(self) -> record.PointKey:
        return record.PointKey(
            case=self.case.id,
            kind="variant",
            name=self.variant_name,
            device=self.device,
            role=self.variant.role.value,
            size=dict(self.size),
            size_label=self.size_label,
            dtype=dtype_name(self.dtype),
            part=self.part,
            timing_mode="" if self.timing == "warm" else self.timing,
            compiled_from=self.compiled_from,
        )


@dataclass(frozen=True, eq=False)
class PairPoint:
    """Two variants of one comparison at one size, dtype and device, timed side by side (rounds
    alternating between them, harness.measure.interleave): the point a verdict's speed-up is read from.
    ``fast``/``slow`` are the names the case's rule gives the sides (harness.contract.rules.compared_pairs);
    each side is also a `VariantPoint` (its inputs, oracle and tolerance)."""

    case: Case
    fast: str
    slow: str
    size: Size
    dtype: torch.dtype
    device: str
    part: str = ""
    against: str = "rule"

    def side(self, name: str) -> VariantPoint:
        return VariantPoint(self.case, name, self.size, self.dtype, self.device, part=self.part)

    @property
    def sides(self) -> tuple[VariantPoint, VariantPoint]:
        return self.side(self.fast), self.side(self.slow)

    @property
    def comparison(self) -> Comparison:
        return self.case.parts[self.part] if self.part else self.case

    @property
    def size_label(self) -> str:
        return self.side(self.fast).size_label

    @property
    def requires(self):
        fast, slow = self.sides
        return tuple(dict.fromkeys(fast.requires + slow.requires))

    @property
    def id(self) -> str:
        parts = (
            self.case.id,
            self.part,
            f"{self.fast}-vs-{self.slow}",
            size_label(self.size),
            dtype_name(self.dtype),
        )
        return "-".join(p for p in parts if p) + f"-{self.device}"

    @functools.cached_property
    def key(self) -> record.PointKey:
        return record.PointKey(
            case=self.case.id,
            kind="pair",
            name=f"{self.fast}/{self.slow}",
            device=self.device,
            size=dict(self.size),
            size_label=self.size_label,
            dtype=dtype_name(self.dtype),
            part=self.part,
        )


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
    def slow(self) -> bool:
        return self.check.slow

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.check_name}-{self.device}"

    @functools.cached_property
    def key(self) -> record.PointKey:
        return record.PointKey(case=self.case.id, kind="check", name=self.check_name, device=self.device)


@dataclass(frozen=True)
class LaunchPoint:
    """A test that launches worker processes (suite/test_distributed.py): its requirements give its
    markers and skip like any point's. ``world`` is the ranks it launches, or None where the ID
    leaves it out (a test that sets up its own launch: two nodes, a fault, DataParallel's one
    process). The ranks time their own steps and the benchmark replays them (timing ``replay``)."""

    case: str
    name: str  # what is launched, "" where the catalogue ID says it all (parallel.allreduce-w2-cpu)
    device: str
    world: int | None = None
    requires: tuple[str, ...] = ("distributed",)
    slow: bool = False
    test: str = ""  # the test function: the recorded check is named after it, as for any topic test
    timing: str = "replay"

    @classmethod
    def on(
        cls,
        case: str,
        name: str,
        device: str,
        world: int | None = None,
        *,
        gpus: int | None = None,
        slow: bool = False,
    ) -> LaunchPoint:
        """On CUDA one process per GPU over NCCL (dist_worker's backend there); gloo on CPU."""
        on_gpus = (f"gpus>={gpus or world or 1}", "nccl") if device == "cuda" else ()
        return cls(case, name, device, world, ("distributed",) + on_gpus, slow)

    @property
    def id(self) -> str:
        world = f"w{self.world}" if self.world else ""
        return "-".join(p for p in (self.case, self.name, world, self.device) if p)

    @property
    def key(self) -> record.PointKey:
        rest = self.id.removeprefix(self.case + "-")
        name = f"{self.test}-{rest}" if self.test else rest
        return record.PointKey(case=self.case, kind="check", name=name, device=self.device)


@dataclass(frozen=True)
class TopicPoint:
    """A suite test of one case that its declaration cannot express (suite/test_precision.py: the
    precision flags each variant and check leaves as it found them), recorded as a check of `case`
    named after the test and `name`, like a rule check. Runs on the host CPU."""

    case: str
    name: str
    test: str  # the test function: the recorded check is ``<test>-<name>``
    device: str = "cpu"
    requires: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.case}-{self.name}"

    @property
    def key(self) -> record.PointKey:
        return record.PointKey(
            case=self.case, kind="check", name=f"{self.test}-{self.name}", device=self.device
        )


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


def _twin_size(comparison: Comparison, twin: Variant, sizes, device: str, capacity: int | None) -> int:
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


def variant_points(profile: str, devices, compile_scope: str = "auto", capacity=None) -> list[VariantPoint]:
    """Every (variant, size, dtype, device) of every comparison, with the compiled twins where
    `compile_scope` puts them (harness.measure.compiled.compiled_cases). `capacity`: {device: bytes} for
    placing the twins (default: this machine's, harness.measure.memory_capacity)."""
    compiled_cases = compiled.compiled_cases(compile_scope, profile)
    if capacity is None:
        capacity = {d: measure.memory_capacity(d) for d in devices}
    points = []
    for case in all_cases():
        for part, comparison in case.comparisons().items():
            sizes = comparison.sizes_for(profile)
            twins = (
                compiled_variants(case.id, part)
                if compiled_cases is None or case.id in compiled_cases
                else {}
            )
            twin_sizes = {
                (name, device): _twin_size(comparison, twin, sizes, device, capacity.get(device))
                for name, twin in twins.items()
                for device in devices
            }
            compiled_on = set()  # (compiled variant, device): each compiled once per device
            for index, size in enumerate(sizes):
                for device in devices:
                    for dtype in comparison.dtypes.get(device, ()):
                        variants = dict(comparison.variants)
                        # A compile costs seconds (minutes with max-autotune): one per pair and
                        # device, at the largest size where its naive way fits (verdicts are
                        # judged at the largest size; a twin needs its naive way timed beside it)
                        # and the first dtype the naive way runs in.
                        variants.update(
                            {
                                n: v
                                for n, v in twins.items()
                                if twin_sizes[n, device] == index
                                and (n, device) not in compiled_on
                                and (
                                    not n.endswith("_max_autotune")
                                    or (device == "cuda" and profile == "full")
                                )
                            }
                        )
                        for name, variant in variants.items():
                            if variant.dtypes is None or dtype in variant.dtypes:
                                points.append(VariantPoint(case, name, size, dtype, device, part=part))
                                if variant.role is Role.COMPILED:
                                    compiled_on.add((name, device))
    return points


def pair_points(profile: str, devices) -> list[PairPoint]:
    """Every pair a comparison's timings are read as (its rule's, else optimized or library over
    naive: harness.contract.rules.compared_pairs) at every size, dtype and device both sides run in:
    where the gain turns with size, every size says so."""
    points = []
    for case in all_cases():
        rule = declared.rule_of(case)
        for part, comparison in case.comparisons().items():
            roles = {name: v.role.value for name, v in comparison.variants.items()}
            for fast, slow, against in rules.compared_pairs(rule, roles):
                a, b = comparison.variants[fast], comparison.variants[slow]
                for size in comparison.sizes_for(profile):
                    for device in devices:
                        for dtype in comparison.dtypes.get(device, ()):
                            if all(v.dtypes is None or dtype in v.dtypes for v in (a, b)):
                                points.append(PairPoint(case, fast, slow, size, dtype, device, part, against))
    return points


def check_points(devices) -> list[CheckPoint]:
    return [
        CheckPoint(case, name, device)
        for case in all_cases()
        for name, check in case.checks.items()
        for device in devices
        if device in check.devices
    ]


def with_timing_modes(points: list[VariantPoint], modes) -> list[VariantPoint]:
    """Each CUDA point once per GPU timing mode (mode innermost, so a size's variants stay
    together for the input cache); CPU points only warm, as before. A compiled twin only in the
    first mode: each of its points compiles cold, once per pair and device."""
    out = []
    for p in points:
        if p.device != "cuda":
            point_modes = ("warm",)
        else:
            point_modes = modes[:1] if p.variant.role is Role.COMPILED else modes
        for mode in point_modes:
            out.append(p if mode == "warm" else dataclasses.replace(p, timing=mode))
    return out


def points_by_argument(
    arguments, *, profile: str, devices, compile_scope: str, timing_modes, predicate=None
) -> dict[str, list]:
    """The points a suite test runs, under the argument it takes them by: ``variant_point`` (once
    per timing mode where the test times them, i.e. takes ``benchmark``; only those `predicate`
    accepts), ``pair_point`` and ``check_point``."""
    out = {}
    if "variant_point" in arguments:
        points = variant_points(profile, devices, compile_scope)
        if "benchmark" in arguments:
            points = with_timing_modes(points, timing_modes)
        out["variant_point"] = [p for p in points if predicate is None or predicate(p)]
    if "pair_point" in arguments:
        out["pair_point"] = pair_points(profile, devices)
    if "check_point" in arguments:
        out["check_point"] = check_points(devices)
    return out


def cpu_only_cases(points) -> set[str]:
    """The cases among `points` that no CUDA test covers at all (RecordIO files, a scheduler's
    state dict): they join the GPU command's run (`-m gpu`) on the host's CPU, so the GPU report
    holds every catalogue ID the machine can run."""
    points = list(points)
    on_cuda = {p.key.case for p in points if p.key.device == "cuda"}
    # From the declarations too, not the collected points alone: on a machine without CUDA none
    # are collected (--device defaults to the devices present), and every case would look CPU-only.
    on_cuda |= {case.id for case in all_cases() if declared.declares_cuda(case)}
    return {p.key.case for p in points} - on_cuda


def point_of(item):
    """The plan point a collected pytest item was parametrised with (any parameter with
    `requires` and a `key`), or None."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    # an empty parametrisation gives NOTSET, which has neither
    return next((p for p in params.values() if hasattr(p, "requires") and hasattr(p, "key")), None)


def select_points(predicate):
    """Decorator for a suite test taking `variant_point`: run it only on the points `predicate`
    accepts (e.g. optimized variants on CUDA), keeping the shared parametrisation and markers."""

    def mark(test):
        test.select_points = predicate
        return test

    return mark


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
            measure.free_memory(point.device)
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
