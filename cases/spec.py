"""The declaration of a case: what one catalogue technique is, with no notion of how it is run.

A `Case` is frozen data. The pytest glue in `suite/` turns it into tests (check each variant
against the oracle, time each variant, run each rule check); `reports/` reads the results and
applies the case's `verdict` rule. Nothing here imports pytest.

Calling conventions, so every case reads the same way:

* ``make_inputs(size, dtype, device, seed) -> tuple`` — random (never all zeros), seeded, drawn
  on ``device`` with `cases._lib.inputs.generator` (a large input drawn on the CPU costs seconds).
* a variant's ``fn(*inputs)`` returns a tensor (or a tuple of tensors) comparable with
  ``oracle(*inputs)``, which returns the float64 truth.
* a rule check's ``fn(device)`` raises ``AssertionError`` when behaviour differs from the truth
  it encodes, and may return a `Finding`: the verdict on the *notes'* claim, computed from what
  was observed (never written down in advance).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

from harness.contract import rules as _rules
from harness.contract.claims import Claim, ClaimKind, Erratum, ErratumKind, Finding, Verdict  # noqa: F401  (the declaration API)

Size = Mapping[str, int]
"""One point of a size sweep, e.g. ``{"n": 1024, "m": 1024, "d": 256}``."""

PROFILES = ("quick", "full")
"""`quick`: CI on 2 CPU cores, seconds per case. `full`: sizes that fill a GPU."""


class Role(str, enum.Enum):
    NAIVE = "naive"
    OPTIMIZED = "optimized"
    LIBRARY = "library"
    COMPILED = "compiled"  # torch.compile of a naive variant, made by the suite (harness.measure.compiled)


UNIT_ROUNDOFF = {
    torch.float64: 2.0**-53,
    torch.float32: 2.0**-24,
    torch.float16: 2.0**-11,
    torch.bfloat16: 2.0**-8,
}
"""u: the largest relative error of one rounding to the dtype (half an ulp at 1)."""

U_TF32 = 2.0**-11
"""TF32 keeps fp32's exponent and rounds the mantissa to 10 bits (as fp16 does)."""


@dataclass(frozen=True)
class Tol:
    """How far a result may be from its float64 truth, checked per output tensor.

    Element-wise (the default), torch.testing's ``|got - truth| <= atol + rtol * |truth|`` with
    one more term, an absolute floor measured in units of the truth's own largest magnitude:

        |got - truth| <= atol + floor * max|truth| + rtol * |truth|

    ``rtol`` bounds errors proportional to the element itself (the final rounding, a scaling, a sum
    of terms of one sign). ``floor`` bounds errors that are not: a dot product or a difference
    loses ``u * sqrt(K)`` or so of the size of its *terms*, which lands on small and large results
    alike, so relative error means nothing where the truth is near zero. Measured against
    ``max|truth|`` it follows each variant's own scale: outputs near 2 and outputs near 512 get the
    same relative bound, where one absolute ``atol`` would be tight for one and loose for the
    other. Keep ``atol`` for exact results (0) and quantities with a scale of their own.

    Norm-wise (``norm`` given, the element-wise fields left 0): ``||got - truth||_2 <= norm *
    ||truth||_2`` per tensor instead, for results where a few elements may legitimately be far
    off (a ReLU kink that the two precisions land on either side of) while the tensor as a whole
    is held to rounding error.

    Say beside every bound why it is what it is: the dtype's unit roundoff (`UNIT_ROUNDOFF`),
    times a factor for the length of the reductions or the depth of the chain, times the scale.
    Where that factor depends on the size, declare a function of the size instead of a Tol
    (``tolerance={FP32: lambda size: Tol(...)}``, resolved by `tolerance_at`). A 1e-4 relative
    bias must stay outside every fp32 bound at the quick sizes (``tests/unit/properties/test_mutations.py``).
    """

    rtol: float = 0.0
    atol: float = 0.0
    floor: float = 0.0
    norm: float | None = None

    def __post_init__(self):
        if min(self.rtol, self.atol, self.floor) < 0 or (self.norm is not None and self.norm < 0):
            raise ValueError(f"negative tolerance: {self!r}")
        if self.norm is not None and (self.rtol or self.atol or self.floor):
            raise ValueError(f"a norm-wise tolerance has no element-wise terms: {self!r}")

    def __str__(self):
        if self.norm is not None:
            return f"||got - truth|| <= {self.norm:.3g}*||truth||"
        terms = [f"rtol={self.rtol:.3g}", f"atol={self.atol:.3g}"]
        if self.floor:
            terms.append(f"floor={self.floor:.3g}*max|truth|")
        return " ".join(terms)


def tolerance_at(tolerance: Tol | Callable[[Size], Tol], size: Size) -> Tol:
    """A declared tolerance at one size: the `Tol` itself, or what the declared function returns."""
    return tolerance if isinstance(tolerance, Tol) else tolerance(size)


@dataclass(frozen=True)
class Variant:
    """One way of computing the case's result.

    ``inputs`` overrides the case's input maker for variants that are only valid on special
    inputs (a unit-norm shortcut needs unit vectors); the oracle is then evaluated on those.
    ``oracle`` and ``tolerance`` override the case's for a variant that computes something else
    (full BPTT beside truncated) or is held to a tighter bound (an IEEE fp32 path beside TF32 ones).
    ``peak_bytes(size, itemsize)`` estimates the variant's peak working set so that a size that
    cannot fit is skipped with a reason before it is tried. ``flops`` and ``bytes_moved`` override
    the comparison's cost model (reports' achieved FLOP/s and GB/s) for this variant.
    """

    fn: Callable[..., Any]
    role: Role
    inputs: Callable[..., tuple] | None = None
    peak_bytes: Callable[[Size, int], int] | None = None
    requires: tuple[str, ...] = ()
    dtypes: tuple[torch.dtype, ...] | None = None  # None: every dtype the case runs
    oracle: Callable[..., Any] | None = None
    tolerance: Mapping[torch.dtype, Tol | Callable[[Size], Tol]] | None = None
    # The variant's own cost model where the comparison's does not describe its work (a zero-
    # inserted conv does s² times the flops of the transposed conv it stands for; a KD-tree does
    # none of the brute force's GEMM). A function returning None: no model for this variant.
    flops: Callable[[Size], float | None] | None = None
    bytes_moved: Callable[[Size, int], float | None] | None = None
    # The correctness claim its check against the oracle decides (a `Claim.id` of the case): a
    # variant outside its tolerance makes that claim fail. None: context (a library's way, a
    # control), whose red check still keeps the ID from `holds`.
    claim: str | None = None


def naive(fn, **kw) -> Variant:
    return Variant(fn, Role.NAIVE, **kw)


def optimized(fn, **kw) -> Variant:
    return Variant(fn, Role.OPTIMIZED, **kw)


def library(fn, **kw) -> Variant:
    return Variant(fn, Role.LIBRARY, **kw)


@dataclass(frozen=True)
class InputFamily:
    """A family of edge-case inputs a comparison's variants must also be right on: near-duplicate
    points, ties, values near the dtype's limits, strided or channels_last layouts, an empty or
    size-1 dimension. One seed times; the families (and a few more seeds) only check.

    The family's inputs are the variant's own, drawn by its own maker (the comparison's, or the
    variant's ``inputs``) at ``resize(size)`` and then handed to ``transform(*inputs) -> tuple``:
    so one family serves variants whose inputs differ (a column-major and a row-major matrix made
    strided alike). The bound is the variant's own, at the resized size: a family that needs a
    wider one shows a real loss of precision, which ``fails`` declares instead of a wider bound.

    ``variants``: the variant names it applies to (None: all). ``fails``: variant → why its own
    check rejects this family, measured and documented (the check must keep rejecting it: a
    listed variant that passes is a stale entry, and the error against the bound is printed).
    """

    transform: Callable[..., tuple] = lambda *inputs: inputs
    resize: Callable[[Size], Size] | None = None
    variants: tuple[str, ...] | None = None
    fails: Mapping[str, str] = field(default_factory=dict)

    def applies_to(self, variant_name: str) -> bool:
        return self.variants is None or variant_name in self.variants

    def make(self, input_maker: Callable[..., tuple], size: Size, dtype, device, seed: int) -> tuple:
        return tuple(self.transform(*input_maker(self.size_of(size), dtype, device, seed)))

    def size_of(self, size: Size) -> Size:
        return self.resize(size) if self.resize else size


@dataclass(frozen=True)
class Check:
    """A rule/behaviour check: ``fn(device)`` raises AssertionError or returns a `Finding`."""

    fn: Callable[[torch.device], Finding | None]
    requires: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("cpu", "cuda")
    slow: bool = False  # marked `slow`: left out by -m "not slow" (e.g. a sweep that takes seconds)
    # The claim its finding decides (a `Claim.id` of the case); None: context, reported, deciding
    # nothing (a comparison the catalogue adds, a measurement, a spelling of the notes).
    claim: str | None = None


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """What is timed: one computation's seeded inputs, the variants that compute it, their float64
    truth and error bounds, the sizes and dtypes, and the cost model (work per point).

    A `Case` is its catalogue ID's main comparison; a technique that compares more than one
    computation (layout.contiguous: copies, five ops in three memory layouts, a conv in two memory
    formats) declares the others as named ``parts``. The suite checks and times every part's
    variants like the case's own, and labels their sizes with the part's name, so reports never
    compare two parts' variants with each other.
    """

    make_inputs: Callable[..., tuple] | None = None
    variants: Mapping[str, Variant] = field(default_factory=dict)
    oracle: Callable[..., Any] | None = None
    tolerance: Mapping[torch.dtype, Tol | Callable[[Size], Tol]] = field(default_factory=dict)
    sizes: Mapping[str, Sequence[Size]] = field(default_factory=dict)
    dtypes: Mapping[str, tuple[torch.dtype, ...]] = field(
        default_factory=lambda: {"cpu": (torch.float32,), "cuda": (torch.float32,)}
    )
    flops: Callable[[Size], float] | None = None
    bytes_moved: Callable[[Size, int], float] | None = None
    x: str | None = None  # the size parameter on the plots' x axis; default: the first one
    # Extra numbers measured once per eager variant point (not the compiled twins: their graph is
    # not what the function measures) outside the timed region, stored in the
    # benchmark's extra_info (e.g. {"saved_bytes": ...} from harness.measure.saved_tensor_bytes).
    metrics: Callable[[str, tuple, torch.device], Mapping[str, float]] | None = None
    # Naive variants torch.compile is not applied to, with why (file I/O, a DataLoader: nothing
    # for Inductor to compile); every other naive variant of a timed pair gets a compiled twin.
    uncompilable: Mapping[str, str] = field(default_factory=dict)
    # Pairs timed side by side that decide no claim, (fast, slow) variant names or roles: a better
    # way the catalogue adds beside the notes' own (the library over the notes' loop), reported and
    # gated. A comparison times these and the pairs its case's rule names among its variants
    # (harness.contract.rules.compared_pairs), nothing else: one with two or more variants and
    # neither is refused (`Case`).
    context_pairs: Sequence[tuple[str, str]] = ()
    # Edge-case inputs the variants are checked on besides the seeded random ones (`InputFamily`);
    # none by default. Checked by tests/integration/test_seeds_and_edges.py, never timed.
    input_families: Mapping[str, InputFamily] = field(default_factory=dict)

    def _validate(self, where: str) -> None:
        if not self.variants:
            return
        if self.make_inputs is None or self.oracle is None:
            raise ValueError(f"{where}: variants need make_inputs and an oracle")
        for profile in self.sizes:
            if profile not in PROFILES:
                raise ValueError(f"{where}: unknown profile {profile!r}; use {PROFILES}")
        for dtypes in self.dtypes.values():
            missing = [d for d in dtypes if d not in self.tolerance]
            if missing:
                raise ValueError(f"{where}: no tolerance for {missing}")
        for fast, slow in self.context_pairs:
            unknown = [n for n in (fast, slow) if n not in self.variants and n not in _rules.ROLES]
            if unknown:
                raise ValueError(
                    f"{where}: context pair ({fast}, {slow}) names {unknown}, not its variants or a role"
                )
        for name, family in self.input_families.items():
            applies = set(self.variants) if family.variants is None else set(family.variants)
            unknown = (applies | set(family.fails)) - (applies & set(self.variants))
            if unknown:
                raise ValueError(f"{where}: input family {name!r} names {sorted(unknown)}, not its variants")

    def sizes_for(self, profile: str) -> Sequence[Size]:
        return self.sizes.get(profile, ())

    @property
    def x_axis(self) -> str | None:
        if self.x:
            return self.x
        for sizes in self.sizes.values():
            for size in sizes:
                return next(iter(size))
        return None

    def flops_of(self, variant: Variant, size: Size) -> float | None:
        model = variant.flops or self.flops
        return model(size) if model else None

    def bytes_of(self, variant: Variant, size: Size, itemsize: int) -> float | None:
        model = variant.bytes_moved or self.bytes_moved
        return model(size, itemsize) if model else None


@dataclass(frozen=True, kw_only=True)
class Case(Comparison):
    id: str
    tier: int
    claim: str
    source: str
    checks: Mapping[str, Check] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    # A harness.contract.rules rule; None: FromFindings(). Its Faster/NotFaster/Lighter nodes are also
    # the declaration of the pairs that decide a claim (harness.contract.rules.compared_pairs).
    verdict: Any = None
    gate_tolerance: float | None = None  # per-case override of the gate's allowed drop
    parts: Mapping[str, Comparison] = field(default_factory=dict)
    # The notes' claims this ID judges (CATALOG.md: "Claims are the unit"); each is decided by the
    # checks, variants and rule nodes that name it.
    claims: tuple[Claim, ...] = ()
    # The outcomes a launched point records under its own name (suite/test_distributed.py,
    # `cases._launch.dist_launches.LaunchRecord`: e.g. ``spawn_tcp``, or the point's own name
    # where it records no finding or is skipped) → the claim each decides.
    launched: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if "." not in self.id or self.id != self.id.strip():
            raise ValueError(f"case id {self.id!r} is not a catalogue ID like 'topic.name'")
        if self.tier not in (1, 2, 3):
            raise ValueError(f"{self.id}: tier must be 1, 2 or 3, not {self.tier!r}")
        self._validate(self.id)
        for name, part in self.parts.items():
            if not name or "-" in name or not part.variants:
                raise ValueError(f"{self.id}: part {name!r} needs a name without '-' and variants")
            part._validate(f"{self.id} part {name}")
        if not self.variants and not self.checks and not self.parts:
            raise ValueError(f"{self.id}: a case needs variants to time or checks to run")
        self._validate_pairs()
        self._validate_claims()

    def _validate_pairs(self) -> None:
        """The timed pairs are declared, never guessed: every name the rule's nodes give is a
        variant (or a role), and every comparison of two or more variants times a declared pair."""
        variants = {n for comparison in self.comparisons().values() for n in comparison.variants}
        named = {n for spec in _rules.named_specs(self.verdict) for n in spec}
        unknown = sorted(named - variants - set(_rules.ROLES))
        if unknown:
            raise ValueError(f"{self.id}: the verdict rule names {unknown}, not its variants or a role")
        for part, comparison in self.comparisons().items():
            roles = {name: v.role.value for name, v in comparison.variants.items()}
            if len(roles) > 1 and not _rules.compared_pairs(self.verdict, roles, comparison.context_pairs):
                raise ValueError(
                    f"{self.id}{' part ' + part if part else ''}: {len(roles)} variants and no pair "
                    "declared to time them side by side: name it in the verdict rule (Faster, Lighter) "
                    "or in context_pairs"
                )

    def _validate_claims(self) -> None:
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.id}: a claim id repeats ({ids})")
        named = {f"check {n}": c.claim for n, c in self.checks.items()}
        for part, comparison in self.comparisons().items():
            named |= {
                f"variant {part + '/' if part else ''}{n}": v.claim for n, v in comparison.variants.items()
            }
        named |= {f"rule {type(r).__name__}": r.claim for r in _rules.claimed(self.verdict)}
        named |= {f"launched {n}": claim for n, claim in self.launched.items()}
        unknown = {what: claim for what, claim in named.items() if claim and claim not in ids}
        if unknown:
            raise ValueError(f"{self.id}: these name claims the case does not declare: {unknown}")

    def decided_claims(self) -> tuple[Claim, ...]:
        """The claims with what decides each filled in (`Claim.checks`, `Claim.variants`)."""
        out = []
        for claim in self.claims:
            checks = tuple(n for n, c in self.checks.items() if c.claim == claim.id)
            checks += tuple(n for n, c in self.launched.items() if c == claim.id)
            variants = tuple(
                f"{part + '/' if part else ''}{n}"
                for part, comparison in self.comparisons().items()
                for n, v in comparison.variants.items()
                if v.claim == claim.id
            )
            out.append(dataclasses.replace(claim, checks=checks, variants=variants))
        return tuple(out)

    def undecided_claims(self) -> list[str]:
        """Claims nothing decides: no check, variant or rule node names them."""
        by_rule = {r.claim for r in _rules.claimed(self.verdict)}
        return [
            c.id for c in self.decided_claims() if not c.checks and not c.variants and c.id not in by_rule
        ]

    def comparisons(self) -> dict[str, Comparison]:
        """Every comparison the case times, by part name ("" for the case's own)."""
        own = {"": self} if self.variants else {}
        return {**own, **self.parts}


def size_label(size: Size) -> str:
    """``{"n": 1024, "d": 256}`` → ``"n1024-d256"``: readable in test IDs and CSV rows."""
    return "-".join(f"{k}{v}" for k, v in size.items())


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
