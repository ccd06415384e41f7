"""Hypothesis properties run from inside a rule check, deterministically, with their cost counted.

A check calls `run_property(strategy, prop)`: Hypothesis draws `max_examples` inputs (derandomized,
no example database, no deadline, so CI sees the same examples on every run) and `prop` asserts on
each. The number of examples actually run and the wall time go into the finding's evidence.
`smallest(strategy, condition)` returns Hypothesis's shrunk minimal example where the notes' claim
is false, or None when none was found: that is the falsifying example a finding quotes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hypothesis import HealthCheck, find, given, settings
from hypothesis.errors import NoSuchExample

EXAMPLES = 300


def _settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@dataclass(frozen=True)
class Run:
    examples: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.examples} Hypothesis examples in {self.seconds:.2f} s"


def run_property(strategy, prop, max_examples: int = EXAMPLES) -> Run:
    """Run `prop(example)` on `max_examples` drawn examples; AssertionError propagates (shrunk)."""
    count = 0

    @_settings(max_examples)
    @given(strategy)
    def wrapped(example):
        nonlocal count
        count += 1
        prop(example)

    start = time.perf_counter()
    wrapped()
    return Run(count, time.perf_counter() - start)


def smallest(strategy, condition, max_examples: int = EXAMPLES):
    """The minimal example satisfying `condition`, or None when none turns up."""
    try:
        return find(strategy, condition, settings=_settings(max_examples))
    except NoSuchExample:
        return None
