"""Verdict rules: how a case's claim is judged from its results. Declarative data, and the one
function that says which variants a rule compares (the plan times those pairs interleaved; the
reports and the gate compare the same pairs).

A case names its rule (``Case(verdict=Faster(...))``); `reports` evaluates it on the tidy results
of one machine and device, so the rule lives with the claim and the statistics live with the
numbers. ``fast``/``slow``/``light``/``heavy`` name a variant, or a role ("naive", "optimized",
"library") meaning every variant with that role.

Without a rule a case is judged by ``FromFindings()``. The rule's nodes are also the declaration
of the pairs a case times side by side (`compared_pairs`): nothing is guessed from the variants'
roles. Whatever the rule, every check's finding on the technique is a part of the claim beside it
(a finding that fails makes the technique fail; reports.verdicts.judge); the notes' errata a check
finds never are. A gain counts only beyond the band harness.contract.gain sets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Faster:
    """`fast` beats `slow` at the largest size measured on the device: the 95% CI of the speedup
    (slow ÷ fast, from rounds timed side by side) lies above 1 + δ (harness.contract.gain: δ ≥ 5% and ≥ the
    machine's noise floor). Inside ±δ: no measurable difference, which fails the claim (depends
    where the band was widened by noise); slower beyond the band: fails; an interval across an
    edge of the band, or holding on one device and not another: depends. `min_speedup` is kept
    for files that recorded it; the band decides."""

    fast: str = "optimized"
    slow: str = "naive"
    min_speedup: float = 1.0
    # What must hold on the machine for the two ways to differ at all (e.g. "a reduced-precision
    # fp32 kernel"). Observed per pair: where the two ways give bitwise-identical results there,
    # they ran one computation and the premise is absent: depends, never a speed-up.
    premise: str = ""
    # The notes' claim this rule decides (a `Claim.id` of the case); "": context, decides nothing.
    claim: str = ""


@dataclass(frozen=True)
class Lighter:
    """`light` peaks at less memory than `heavy` at the largest size measured (ratio heavy/light
    above `min_ratio`)."""

    light: str = "optimized"
    heavy: str = "naive"
    min_ratio: float = 1.0
    # The notes' claim this rule decides (a `Claim.id` of the case); "": context, decides nothing.
    claim: str = ""


@dataclass(frozen=True)
class AllOf:
    """Holds when every rule holds; fails when any fails; otherwise depends."""

    rules: tuple
    # The notes' claim this rule decides (a `Claim.id` of the case); "": context, decides nothing.
    claim: str = ""


@dataclass(frozen=True)
class AnyOf:
    """A hedge that one observation settles: holds when any part holds (e.g. "not necessarily
    faster or smaller" is borne out by a point where either gain is missing); fails when every
    measured part fails; otherwise depends."""

    rules: tuple
    # The notes' claim this rule decides (a `Claim.id` of the case); "": context, decides nothing.
    claim: str = ""


@dataclass(frozen=True)
class FromFindings:
    """The verdict from the rule checks' findings: any `fails` → fails, any `depends` → depends,
    at least one `holds` → holds."""


@dataclass(frozen=True)
class NotLighter:
    """The notes' claim is that `light` is *not necessarily* smaller than `heavy` (e.g. "AMP is not
    necessarily smaller"): holds where `light` peaks at no less memory than `heavy` at some measured
    device, dtype or size; fails where it is lighter everywhere."""

    light: str = "optimized"
    heavy: str = "naive"
    # The notes' claim this rule decides (a `Claim.id` of the case); "": context, decides nothing.
    claim: str = ""


@dataclass(frozen=True)
class NotFaster:
    """The notes' claim is that `fast` is *not necessarily* faster than `slow` (e.g. "AMP is not
    necessarily faster"): holds where the CI of the speedup includes or lies below 1 on some
    measured device or size, fails where it is faster everywhere."""

    fast: str = "optimized"
    slow: str = "naive"
    # The notes' claim this rule decides (a `Claim.id` of the case); "": context, decides nothing.
    claim: str = ""


ROLES = ("naive", "optimized", "library", "compiled")


def speed_rules(rule):
    """The Faster/NotFaster rules inside a rule (AllOf and AnyOf nest them)."""
    if isinstance(rule, (Faster, NotFaster)):
        yield rule
    elif isinstance(rule, (AllOf, AnyOf)):
        for inner in rule.rules:
            yield from speed_rules(inner)


def memory_rules(rule):
    """The Lighter rules inside a rule (AllOf and AnyOf nest them)."""
    if isinstance(rule, Lighter):
        yield rule
    elif isinstance(rule, (AllOf, AnyOf)):
        for inner in rule.rules:
            yield from memory_rules(inner)


def claimed(rule):
    """The outermost nodes of a rule that name a claim (each decides its claim as a whole: an
    AnyOf hedge with its parts)."""
    if getattr(rule, "claim", ""):
        yield rule
    elif isinstance(rule, (AllOf, AnyOf)):
        for inner in rule.rules:
            yield from claimed(inner)


def expand(spec: str, roles: dict[str, str]) -> list[str]:
    """A variant name, or a role meaning every variant with that role (``roles``: name → role)."""
    if spec in ROLES:
        return [name for name, role in roles.items() if role == spec]
    return [spec] if spec in roles else []


def named_specs(rule):
    """(fast, slow) of every pair a rule's nodes name, as written (variant names or roles): the speed
    nodes' (Faster, NotFaster) in the rule's order, then the memory nodes' (Lighter)."""
    return [(r.fast, r.slow) for r in speed_rules(rule)] + [(r.light, r.heavy) for r in memory_rules(rule)]


def named_pairs(specs, roles: dict[str, str], kind: str) -> list[tuple[str, str, str]]:
    """(fast, slow, `kind`) for each (fast, slow) spec, a spec a variant name or a role (`expand`)."""
    out: list[tuple[str, str, str]] = []
    for fast_spec, slow_spec in specs:
        for fast in expand(fast_spec, roles):
            for slow in expand(slow_spec, roles):
                if fast != slow and (fast, slow) not in [(f, s) for f, s, _ in out]:
                    out.append((fast, slow, kind))
    return out


def compared_pairs(rule, roles: dict[str, str], context=()) -> list[tuple[str, str, str]]:
    """(fast, slow, against) of the pairs a comparison is timed as, exactly as its case declares
    them: every pair its rule's nodes name among this comparison's variants (``against`` "rule";
    a node naming another part's variants names none here), then every pair of its `context`
    ((fast, slow): a better way the catalogue adds, reported and gated, deciding no claim;
    ``against`` "context"). ``roles``: the comparison's variant name → role. Nothing is inferred:
    a comparison that declares no pair has none (cases.spec.Case refuses one that times variants)."""
    ruled = named_pairs(named_specs(rule), roles, "rule")
    seen = {(f, s) for f, s, _ in ruled}
    return ruled + [p for p in named_pairs(context, roles, "context") if (p[0], p[1]) not in seen]
