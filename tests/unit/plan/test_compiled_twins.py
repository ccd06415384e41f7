"""Which timed pairs get a torch.compile twin (plan/compiled_twins.py) or a reason why not, and where the
plan places and times the twins."""

import torch

from cases import all_cases
from cases.spec import Role
from harness.contract import record
from harness.measure import compiled
from plan import compiled_variants, variant_points


def test_every_timed_pair_has_a_compiled_variant_or_a_reason_in_the_full_profile():
    points = variant_points("full", ("cpu",))
    compiled_pairs = {(p.case.id, p.part) for p in points if p.variant.role is Role.COMPILED}
    pairs = 0
    for case in all_cases():
        for part, comparison in case.comparisons().items():
            roles = {v.role for v in comparison.variants.values()}
            timed_pair = Role.NAIVE in roles and roles & {Role.OPTIMIZED, Role.LIBRARY}
            if not timed_pair:
                continue
            pairs += 1
            naive = [n for n, v in comparison.variants.items() if v.role is Role.NAIVE]
            assert (case.id, part) in compiled_pairs or set(naive) <= set(comparison.uncompilable), (
                case.id,
                part,
            )
            for name, variant in compiled_variants(case.id, part).items():
                source = record.compiled_source(name, naive)
                assert source in naive and variant.oracle is comparison.variants[source].oracle
                assert variant.tolerance is comparison.variants[source].tolerance  # held to the naive's bound
    assert pairs > 20


def test_quick_profile_compiles_only_the_representative_pairs_at_their_largest_size():
    unknown = {"cpu": None, "cuda": None}  # no memory limit known: the largest size
    quick = [
        p
        for p in variant_points("quick", ("cpu", "cuda"), capacity=unknown)
        if p.variant.role is Role.COMPILED
    ]
    assert {p.case.id for p in quick} == set(compiled.QUICK_CASES)
    assert all(p.size == p.comparison.sizes_for("quick")[-1] for p in quick)
    assert not any(p.variant_name.endswith("_max_autotune") for p in quick)
    full = [
        p
        for p in variant_points("full", ("cpu", "cuda"), capacity=unknown)
        if p.variant.role is Role.COMPILED
    ]
    assert all(p.size == p.comparison.sizes_for("full")[-1] for p in full), (
        "one compile per pair, at its largest size"
    )
    autotuned = [p for p in full if p.variant_name.endswith("_max_autotune")]
    assert autotuned and {p.device for p in autotuned} == {"cuda"}


def test_compiled_option_puts_twins_beside_all_pairs_or_none():
    def compiled_pairs(scope):
        points = variant_points("quick", ("cpu",), scope)
        return {(p.case.id, p.part) for p in points if p.variant.role is Role.COMPILED}

    every = compiled_pairs("all")
    assert {c for c, _ in every} > set(compiled.QUICK_CASES)
    assert ("layout.contiguous", "conv3x3") in every  # parts are pairs too
    assert compiled_pairs("none") == set()
    assert compiled_pairs("auto") == compiled_pairs("representative")
    assert {c for c, _ in compiled_pairs("auto")} == set(compiled.QUICK_CASES)


def test_missing_compiler_is_a_skip_with_the_reason(monkeypatch):
    from harness.machine import premises, requirements

    variant = compiled_variants("distance.pairwise")["compiled"]
    assert "compiler" in variant.requires
    monkeypatch.setattr(
        premises,
        "torch_compile",
        lambda device: premises.Premise(f"torch.compile on {device}", False, "no C++ compiler"),
    )
    assert "no C++ compiler" in requirements.unmet(variant.requires, "cpu")


def test_a_compiled_twin_is_timed_in_one_mode_only():
    from harness.measure.timing import TIMING_MODES
    from plan import with_timing_modes

    points = with_timing_modes(variant_points("full", ("cuda",)), TIMING_MODES)
    compiled_modes = {(p.id.split("-cuda")[0], p.timing) for p in points if p.variant.role is Role.COMPILED}
    assert {mode for _, mode in compiled_modes} == {TIMING_MODES[0]}
    assert any(p.timing == "graph" for p in points if p.variant.role is not Role.COMPILED)


def test_a_twin_is_placed_at_the_largest_size_its_naive_way_fits():
    """On an 80 GB GPU, distance.pairwise's broadcast needs 2 TiB at n = 32768: never run there,
    so its twin (which needs the naive time beside it) goes to the largest size that fits."""
    gpu = {"cuda": int(0.9 * 80 * 2**30)}
    points = variant_points("full", ("cuda",), capacity=gpu)
    twins = [p for p in points if p.case.id == "distance.pairwise" and p.variant_name == "compiled"]
    (twin,) = twins
    sizes = twin.comparison.sizes_for("full")
    broadcast = twin.comparison.variants["broadcast"]
    need = [broadcast.peak_bytes(s, 4) for s in sizes]
    assert need[-1] > gpu["cuda"], "the premise: the largest size does not fit"
    fitting = [s for s, n in zip(sizes, need) if n <= gpu["cuda"]]
    assert twin.size == fitting[-1] and twin.dtype == torch.float32
    # the naive way is collected at that size too, so the pair compiled-vs-naive exists
    assert any(
        p.variant_name == "broadcast" and p.size == twin.size and p.dtype == twin.dtype for p in points
    )


def test_every_twin_in_the_plan_names_the_variant_it_compiles():
    for point in variant_points("quick", ("cpu",), "all", capacity={"cpu": None}):
        if point.variant.role is Role.COMPILED:
            source = point.comparison.variants[point.key.compiled_from]
            assert source.role is Role.NAIVE and point.variant.fn.fn is source.fn, point.id
        else:
            assert point.key.compiled_from == "", point.id
