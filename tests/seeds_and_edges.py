"""The seeds-and-edges check of one variant point, shared by its property test
(tests/unit/properties/test_seeds_and_edges.py: the machinery on planted variants) and its
integration test (tests/integration/test_seeds_and_edges.py: every variant of every case): three
more seeds and each input family its comparison declares, each through the suite's own check."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cases.spec import InputFamily, tolerance_at
from harness import measure
from plan import VariantPoint

SEEDS = (1, 2, 3)  # beyond seed 0, which test_check and the timings use
PASSED, FAILED, FINDING, STALE = "passed", "failed", "expected finding", "stale finding"


@dataclass(frozen=True)
class Outcome:
    what: str  # "seed 2" or "near_duplicates"
    outcome: str  # PASSED, FAILED, FINDING (failed as declared), STALE (declared, but passed)
    detail: str  # the check's worst element against its bound, and the declared reason


def families_of(point: VariantPoint) -> dict[str, InputFamily]:
    families = point.comparison.input_families
    return {name: f for name, f in families.items() if f.applies_to(point.variant_name)}


def _check(point: VariantPoint, inputs: tuple, size) -> measure.Error:
    truth = point.oracle(*inputs)
    _, err = measure.checked_call(point.variant.fn, inputs, truth, tolerance_at(point.tolerance, size))
    return err


def outcomes(point: VariantPoint) -> tuple[Outcome, ...]:
    """The point's check on each extra seed and each of its families."""
    found = []
    for seed in SEEDS:
        err = _check(point, point.make_inputs(seed), point.size)
        found.append(Outcome(f"seed {seed}", PASSED if err.within else FAILED, err.worst))
    for name, family in families_of(point).items():
        inputs = family.make(point.input_maker, point.size, point.dtype, torch.device(point.device), 0)
        err = _check(point, inputs, family.size_of(point.size))
        reason = family.fails.get(point.variant_name)
        if reason is None:
            found.append(Outcome(name, PASSED if err.within else FAILED, err.worst))
        elif err.within:
            found.append(Outcome(name, STALE, f"passes; drop it from {name}.fails ({reason})"))
        else:
            found.append(Outcome(name, FINDING, f"{err.worst} (max rel {err.max_rel:.3g}); {reason}"))
    return tuple(found)
