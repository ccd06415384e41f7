"""docs/add-a-case.md's worked example of a new case with a timed pair is real: the page's module
is tests/data/example_case.py byte for byte, its catalogue row parses to that case's ID and tier,
the case declares (its pair from its rule alone), both ways equal the float64 truth at the quick
sizes, and the plan times its pair with nothing but the case handed to it."""

from __future__ import annotations

import re

import torch

from harness.contract import catalogue, declared, record
from tests import paths
from tests.data import example_case

PAGE = paths.ROOT / "docs" / "add-a-case.md"


def _block_after(marker: str) -> str:
    """The fenced block that follows `marker` on the page, without its fences."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(re.escape(marker) + r"\n```[a-z]*\n(.*?)^```$", text, re.S | re.M)
    assert found, f"docs/add-a-case.md has no fenced block after {marker!r}"
    return found.group(1)


def test_the_pages_module_is_the_example_case():
    module = (paths.DATA / "example_case.py").read_text(encoding="utf-8")
    assert _block_after("<!-- module: tests/data/example_case.py -->") == module


def test_the_pages_catalogue_row_is_the_example_cases():
    row = _block_after("<!-- catalogue row: example.row_sums -->")
    (entry,) = catalogue.parse("## Tier 2 — naive vs optimized pairs\n" + row)
    assert (entry.id, entry.tier) == (example_case.CASE.id, example_case.CASE.tier)
    assert example_case.CASE.id not in {e.id for e in catalogue.load()}, (
        "the example stays out of the catalogue"
    )


def test_the_example_declares_its_pair_in_its_rule_and_decides_every_claim():
    case = example_case.CASE
    assert declared.timed_pairs(case) == (record.TimedPair("", "sum", "loop", "rule"),)
    assert case.undecided_claims() == []


def test_both_ways_equal_the_float64_truth_at_the_quick_sizes():
    case = example_case.CASE
    for size in case.sizes_for("quick"):
        (x,) = case.make_inputs(size, torch.float32, "cpu", 0)
        truth = case.oracle(x)
        bound = case.tolerance[torch.float32](size)
        for name, variant in case.variants.items():
            got = variant.fn(x).double()
            assert (got - truth).abs().max().item() <= bound.atol, f"{name} at {size}"


def test_the_plan_times_the_pair_with_nothing_but_the_case(monkeypatch):
    import plan.expand

    monkeypatch.setattr(plan.expand, "all_cases", lambda: [example_case.CASE])
    points = plan.expand.pair_points("quick", ("cpu",))
    assert [(p.fast, p.slow, p.against, p.size) for p in points] == [
        ("sum", "loop", "rule", size) for size in example_case.CASE.sizes_for("quick")
    ]
