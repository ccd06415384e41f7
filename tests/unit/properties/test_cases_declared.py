"""The case declarations: discovered, valid, and covering the catalogue."""

import pytest
import torch

import cases as cases_package
from cases import all_cases
from cases.spec import Case, Check, Comparison, Tol, naive, optimized
from harness.contract import catalogue, declared, record, rules
from harness.contract.rules import Faster, FromFindings
from tests import paths

SHARED_CATALOG = paths.ROOT.parent / "shared" / "CATALOG.md"


def test_catalogue_copy_matches_shared():
    if not SHARED_CATALOG.exists():
        pytest.skip(f"{SHARED_CATALOG} not present on this machine")
    assert catalogue.CATALOG_PATH.read_text() == SHARED_CATALOG.read_text(), (
        f"cases/CATALOG.md is out of date: copy {SHARED_CATALOG} over it"
    )


def test_catalogue_parses_every_tier():
    """Every ID row of the catalogue is parsed (rows with an extra "also:" column and no closing
    pipe were once dropped silently: 42 of 45), counted by a plain scan of the text."""
    entries = catalogue.load()
    rows = [line for line in catalogue.CATALOG_PATH.read_text().splitlines() if line.startswith("| `")]
    assert len({e.id for e in entries}) == len(entries) == len(rows) >= 45
    assert {e.tier for e in entries} == {1, 2, 3}
    assert next(e for e in entries if e.id == "distance.pairwise").measure.startswith("time and peak memory")


def test_every_case_is_in_the_catalogue_with_its_tier():
    tiers = {e.id: e.tier for e in catalogue.load()}
    for case in all_cases():
        assert case.id in tiers, f"{case.id} is not a catalogue ID"
        assert case.tier == tiers[case.id], f"{case.id}: tier {case.tier}, catalogue says {tiers[case.id]}"


def test_every_catalogue_id_has_a_case():
    """The guard DESIGN asks for: a catalogue ID without a case is a failure, never an xfail."""
    missing = sorted({e.id for e in catalogue.load()} - {c.id for c in all_cases()})
    assert not missing, f"{len(missing)} catalogue IDs have no case: {', '.join(missing)}"


COMPARED = dict(
    make_inputs=lambda size, dtype, device, seed: (),
    variants={"a": naive(lambda: None), "b": optimized(lambda: None)},
    oracle=lambda: None,
    tolerance={torch.float32: Tol(0.0, 0.0)},
)


def _timed_case(**kw) -> Case:
    return Case(**{"id": "x.pairs", "tier": 3, "claim": "c", "source": "003", **COMPARED, **kw})


def test_a_comparison_that_times_variants_without_a_declared_pair_is_refused():
    """Two variants and no pair named by the rule or the context: refused where the case is
    declared (nothing pairs the optimized variant with the naive one by their roles)."""
    with pytest.raises(ValueError, match="no pair declared"):
        _timed_case()
    with pytest.raises(ValueError, match="no pair declared"):
        _timed_case(verdict=FromFindings())
    # A rule naming the case's own pair names none of a part's variants.
    other = {**COMPARED, "variants": {"c": naive(lambda: None), "d": optimized(lambda: None)}}
    with pytest.raises(ValueError, match="part p: 2 variants and no pair declared"):
        _timed_case(verdict=Faster("b", "a"), parts={"p": Comparison(**other)})
    # Declared either way, it is accepted and timed as declared.
    ruled = _timed_case(
        verdict=Faster("b", "a"), parts={"p": Comparison(**other, context_pairs=(("d", "c"),))}
    )
    assert declared.timed_pairs(ruled) == (
        record.TimedPair("", "b", "a", "rule"),
        record.TimedPair("p", "d", "c", "context"),
    )
    context = _timed_case(context_pairs=(("b", "a"),))
    assert declared.timed_pairs(context) == (record.TimedPair("", "b", "a", "context"),)


def test_a_rule_names_the_cases_variants():
    with pytest.raises(ValueError, match=r"the verdict rule names \['c'\]"):
        _timed_case(verdict=Faster("c", "a"))


def test_every_timed_comparison_declares_its_pairs():
    """Each comparison with two or more variants times the pairs its case declares (its rule's
    Faster/Lighter nodes and its `context_pairs`), never pairs guessed from the variants' roles."""
    for case in all_cases():
        rule = declared.rule_of(case)
        for part, comparison in case.comparisons().items():
            if len(comparison.variants) < 2:
                continue
            roles = {name: v.role.value for name, v in comparison.variants.items()}
            pairs = rules.compared_pairs(rule, roles, comparison.context_pairs)
            assert pairs, (
                f"{case.id} {part or '(main)'}: no pair declared (Faster or Lighter, or context_pairs)"
            )


def test_a_context_pair_names_the_comparisons_variants():
    with pytest.raises(ValueError, match="context pair"):
        _timed_case(context_pairs=(("c", "a"),))


def test_one_id_per_module():
    """A module declares one catalogue ID, so a reader finds a technique's claims, variants and
    checks in one file (a topic with several IDs is a package, cases/a/b.py per ID)."""
    from collections import defaultdict

    from cases import declared_in

    by_module = defaultdict(list)
    for case in all_cases():
        by_module[declared_in(case.id)].append(case.id)
    shared = {module: ids for module, ids in by_module.items() if len(ids) > 1}
    assert not shared, f"modules declaring more than one ID: {shared}"


def test_every_case_lives_where_its_id_says():
    """Catalogue ID `a.b` is declared in cases/a.py or cases/a/b.py; helpers live in cases/_lib and
    what starts processes (the workers among it) in cases/_launch, so nothing else sits beside the
    cases."""
    import pathlib

    from cases import WHERE, declared_in, expected_modules

    misplaced = {
        c.id: declared_in(c.id) for c in all_cases() if declared_in(c.id) not in expected_modules(c.id)
    }
    assert not misplaced, f"{WHERE}; found {misplaced}"
    root = pathlib.Path(cases_package.__file__).parent
    topics = {c.id.split(".")[0] for c in all_cases()}
    ids = {c.id for c in all_cases()}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).with_suffix("").parts
        if rel[0] in ("_lib", "_launch", "spec", "__init__") or rel[-1] == "__init__":
            continue
        module = ".".join(rel)
        assert module in topics or module in ids, (
            f"cases/{'/'.join(rel)}.py is neither a topic nor an ID ({WHERE})"
        )


def test_inputs_are_random_and_seeded():
    for case in all_cases():
        for comparison in case.comparisons().values():
            _random_and_seeded(case.id, comparison)


def _random_and_seeded(case_id, comparison):
    if comparison.variants:
        size = comparison.sizes_for("quick")[0]
        dtype = comparison.dtypes["cpu"][0]
        makers = {comparison.make_inputs} | {v.inputs for v in comparison.variants.values() if v.inputs}
        for maker in makers:
            a, b = maker(size, dtype, torch.device("cpu"), 0), maker(size, dtype, torch.device("cpu"), 0)
            for ta, tb in zip(a, b):
                if isinstance(ta, torch.Tensor) and ta.is_floating_point():
                    if ta.layout != torch.strided:  # sparse inputs: compare their dense values
                        ta, tb = ta.to_dense(), tb.to_dense()
                    assert torch.equal(ta, tb), f"{case_id}: inputs differ for one seed"
                    assert ta.count_nonzero() > 0, f"{case_id}: all-zero input"


def test_declaration_errors_are_clear():
    with pytest.raises(ValueError, match="catalogue ID"):
        Case(id="nodot", tier=1, claim="", source="", checks={"x": Check(lambda d: None)})
    with pytest.raises(ValueError, match="oracle"):
        Case(id="a.b", tier=2, claim="", source="", variants={"v": naive(lambda: 0)})
    with pytest.raises(ValueError, match="no tolerance"):
        Case(
            id="a.b",
            tier=2,
            claim="",
            source="",
            make_inputs=lambda *a: (),
            oracle=lambda: 0,
            variants={"v": naive(lambda: 0)},
            tolerance={torch.float64: Tol(0, 0)},
        )


def test_every_case_declares_the_notes_claims_and_each_is_decided():
    """Claims are the unit (CATALOG.md): every ID names the notes' claims it judges, each quoted
    from a note file and decided by a check, a variant or a rule node that names it."""
    for case in all_cases():
        assert case.claims, f"{case.id} declares no claim of the notes"
        for claim in case.claims:
            assert claim.file[:3] in ("000", "001", "002", "003", "004"), (case.id, claim.id, claim.file)
        assert not case.undecided_claims(), f"{case.id}: claims nothing decides: {case.undecided_claims()}"


def test_a_claim_named_but_not_declared_is_refused():
    with pytest.raises(ValueError, match="name claims the case does not declare"):
        Case(
            id="x.claims",
            tier=3,
            claim="c",
            source="s",
            checks={"a": Check(lambda device: None, claim="nowhere")},
        )
