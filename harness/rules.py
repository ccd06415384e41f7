"""Verdict rules: how a case's claim is judged from its results. Declarative data only.

A case names its rule (``Case(verdict=Faster(...))``); `reports` evaluates it on the tidy results
of one machine and device, so the rule lives with the claim and the statistics live with the
numbers. ``fast``/``slow``/``light``/``heavy`` name a variant, or a role ("naive", "optimized",
"library") meaning every variant with that role.

Without a rule: a case with variants is judged by ``Faster()``; one with only checks by
``FromFindings()``. Whatever the rule, a case with a failed check is ``fails``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Faster:
    """`fast` beats `slow` at the largest size measured on the device: the 95% CI of the speedup
    (slow median / fast median) lies above `min_speedup`. Below 1 with the CI excluding 1: fails;
    a CI containing 1, or holding on one device and not another: depends."""

    fast: str = "optimized"
    slow: str = "naive"
    min_speedup: float = 1.0


@dataclass(frozen=True)
class Lighter:
    """`light` peaks at less memory than `heavy` at the largest size measured (ratio heavy/light
    above `min_ratio`)."""

    light: str = "optimized"
    heavy: str = "naive"
    min_ratio: float = 1.0


@dataclass(frozen=True)
class AllOf:
    """Holds when every rule holds; fails when any fails; otherwise depends."""

    rules: tuple


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


@dataclass(frozen=True)
class NotFaster:
    """The notes' claim is that `fast` is *not necessarily* faster than `slow` (e.g. "AMP is not
    necessarily faster"): holds where the CI of the speedup includes or lies below 1 on some
    measured device or size, fails where it is faster everywhere."""

    fast: str = "optimized"
    slow: str = "naive"
