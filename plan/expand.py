"""The cases expanded into points: every variant × size × dtype × device of every comparison (with
the compiled twins where the scope puts them), every pair a rule compares, every rule check, each
CUDA point once per timing mode; the points a suite test takes, by the argument it takes them by
(`points_by_argument`, what suite/conftest.py parametrises from), and back from a collected item
to its point (`point_of`).
"""

from __future__ import annotations

import dataclasses

from cases import all_cases
from cases.spec import Role
from harness import measure
from harness.contract import declared
from harness.measure import compiled
from plan.compiled_twins import compiled_variants, twin_size
from plan.points import CheckPoint, PairPoint, VariantPoint


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
                (name, device): twin_size(comparison, twin, sizes, device, capacity.get(device))
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
    """Every pair the case declares (harness.contract.declared.timed_pairs: those its rule names
    and its context pairs) at every size, dtype and device both sides run in: where the
    gain turns with size, every size says so. The results record the same declaration, which the
    summary and the gate read."""
    points = []
    for case in all_cases():
        comparisons = case.comparisons()
        for timed in declared.timed_pairs(case):
            comparison = comparisons[timed.part]
            a, b = comparison.variants[timed.fast], comparison.variants[timed.slow]
            for size in comparison.sizes_for(profile):
                for device in devices:
                    for dtype in comparison.dtypes.get(device, ()):
                        if all(v.dtypes is None or dtype in v.dtypes for v in (a, b)):
                            points.append(
                                PairPoint(
                                    case,
                                    timed.fast,
                                    timed.slow,
                                    size,
                                    dtype,
                                    device,
                                    timed.part,
                                    timed.against,
                                )
                            )
    return points


def timed_in_pairs(pairs) -> dict[str, PairPoint]:
    """Each side's variant-point ID (warm mode) → the first of `pairs` it is a side of: the pair
    whose interleaved rounds give that variant its solo figures too (suite/pair_rounds.py), so a
    variant of a timed pair is timed once. A variant in two pairs (``precision.tf32``'s
    ``matmul.highest`` against ``high`` and ``medium``) takes its rounds from the first."""
    sides: dict[str, PairPoint] = {}
    for pair in pairs:
        for side in pair.sides:
            sides.setdefault(side.id, pair)
    return sides


def checks_run_by_benchmarks(tests) -> list[int]:
    """Positions among `tests` ((test function name, plan point) of each selected test, in order)
    of the ``test_check`` entries whose variant point a selected ``test_benchmark`` runs too, in
    any timing mode. That benchmark calls the variant on the same inputs, checks the answer against
    the same truth and its inputs for writes before anything is timed, under --benchmark-disable
    too (harness.point.variant_benchmark.run), and fails with the same WrongAnswer: the check would
    only call the variant once more for the same verdict (12 s of a quick run on 2 CPU cores).
    A check selected without its benchmark (``-k test_check``) is kept."""
    benchmarked = {
        dataclasses.replace(point, timing="warm").id
        for test, point in tests
        if test == "test_benchmark" and isinstance(point, VariantPoint)
    }
    return [
        i
        for i, (test, point) in enumerate(tests)
        if test == "test_check" and isinstance(point, VariantPoint) and point.id in benchmarked
    ]


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
