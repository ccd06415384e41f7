"""The plan: every point a run measures, as plain data, and what each point needs to run.

A point is one thing the suite does once: check a variant (`VariantPoint`, also timed by
pytest-benchmark: alone, or a side of a timed pair in that pair's rounds, `timed_in_pairs`), time
two variants against each other in alternating rounds (`PairPoint`), run
a rule check (`CheckPoint`) or launch worker processes (`LaunchPoint`). `suite/conftest.py` only
parametrises the tests from this plan. Every node ID starts with the catalogue ID
(``test_check[distance.pairwise-matmul-n1024-...]``), so ``-k distance.pairwise`` selects one
technique. Plain Python: no pytest.

One job per module; this face re-exports the names callers use (``import plan;
plan.points_by_argument(...)``, ``from plan import InputCache, VariantPoint``):

- `points`: the point types and their IDs and keys (`VariantPoint`, `PairPoint`, `CheckPoint`,
  `LaunchPoint`, `TopicPoint`);
- `compiled_twins`: the compiled-twin policy (`compiled_twins`, `compiled_variants`, the size a
  twin is placed at);
- `expand`: the cases expanded into points over part × variant × size × dtype × device × timing
  mode (`variant_points`, `pair_points`, `check_points`, `with_timing_modes`,
  `points_by_argument`, `cpu_only_cases`, `point_of`, `select_points`, `timed_in_pairs`);
- `inputs`: the input cache and a point's resolution into what the harness measures
  (`InputCache`, the size check `oversize_reason`, `variant_at`, `pair_at`);
- `launches` (which launches each distributed test makes), `estimate` (a run's duration before it
  is made) and `costmodel` (what a timed point costs), imported by name.
"""

from __future__ import annotations

# `plan.measure` is the harness module the size check reads (tests patch its memory budget here).
from harness import measure
from plan.compiled_twins import compiled_twins, compiled_variants
from plan.expand import (
    check_points,
    checks_run_by_benchmarks,
    cpu_only_cases,
    pair_points,
    point_of,
    points_by_argument,
    select_points,
    timed_in_pairs,
    variant_points,
    with_timing_modes,
)
from plan.inputs import InputCache, fresh_build, fresh_spec, oversize_reason, pair_at, variant_at
from plan.points import CheckPoint, LaunchPoint, PairPoint, TopicPoint, VariantPoint

__all__ = [
    "CheckPoint",
    "InputCache",
    "LaunchPoint",
    "PairPoint",
    "TopicPoint",
    "VariantPoint",
    "check_points",
    "checks_run_by_benchmarks",
    "compiled_twins",
    "compiled_variants",
    "cpu_only_cases",
    "fresh_build",
    "fresh_spec",
    "measure",
    "oversize_reason",
    "pair_at",
    "pair_points",
    "point_of",
    "points_by_argument",
    "select_points",
    "timed_in_pairs",
    "variant_at",
    "variant_points",
    "with_timing_modes",
]
