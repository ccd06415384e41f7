"""The point types: one thing the suite does once, as frozen data with its node ID and its
`PointKey` (harness.contract.record), the one description its outcome and benchmark record are
built from. A variant checked and timed alone (`VariantPoint`), two variants timed side by side
(`PairPoint`), a rule check (`CheckPoint`), a launch of worker processes (`LaunchPoint`), a topic
test a declaration cannot express (`TopicPoint`). Every ID starts with the catalogue ID, so
``-k distance.pairwise`` selects one technique.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from cases.spec import Case, Check, Comparison, Size, Variant, dtype_name, size_label
from harness.contract import record
from plan.compiled_twins import compiled_twins, compiled_variants


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
    ``fast``/``slow`` are the sides as the case declares the pair (harness.contract.rules.compared_pairs);
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
