"""cases/_lib/properties.py: a property runs the examples it is given, deterministically, and its
failure propagates; `smallest` gives Hypothesis's shrunk example, or None where none exists."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from cases._lib.properties import Run, run_property, smallest


def test_a_property_runs_its_examples_and_says_how_many():
    seen = []
    run = run_property(st.integers(0, 1000), seen.append, max_examples=20)
    assert isinstance(run, Run) and run.examples == len(seen) and 0 < run.examples <= 20
    again = []
    run_property(st.integers(0, 1000), again.append, max_examples=20)
    assert again == seen  # derandomized: CI sees the same examples every run
    assert str(run).endswith("s") and "Hypothesis examples in" in str(run)


def test_a_false_property_raises():
    def below_ten(x):
        assert x < 10

    with pytest.raises(AssertionError):
        run_property(st.integers(0, 1000), below_ten, max_examples=50)


def test_smallest_is_the_shrunk_counterexample_or_none():
    assert smallest(st.integers(0, 1000), lambda x: x >= 10) == 10
    assert smallest(st.integers(0, 5), lambda x: x > 5, max_examples=20) is None
