"""The judges of `cases/distance.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import distance
from harness.contract.record import ErratumKind, Verdict


def test_cancellation_context_says_when_the_expansion_left_fp32():
    from cases import distance

    seen = {
        "name": "near-duplicate",
        "expansion_err": 1e-4,
        "broadcast_err": 1e-7,
        "rel": True,
        "truth_min": 1e-3,
        "negative": 3,
        "nan_after_sqrt": 3,
        "nan_after_clamp": 0,
    }
    inside = distance.judge_cancellation([{**seen, "within_fp32_bound": True}], 512)
    past = distance.judge_cancellation([{**seen, "within_fp32_bound": False}], 512)
    assert inside.verdict is None and "PAST" not in inside.evidence and "3/512" in inside.evidence
    assert "PAST the fp32 bound" in past.evidence


def test_distance_snippets_shape_slips_are_errata_and_the_repaired_forms_decide():
    f = distance.judge_binary_snippet(raised=True, literal_err=43.0, fixed_err=0.0)
    # The same slip in 000 and 001 (one section, twice): one erratum per place.
    assert f.verdict is Verdict.HOLDS and [e.kind for e in f.errata] == [ErratumKind.SHAPE_SLIP] * 2
    assert [e.file for e in f.errata] == ["000", "001"]
    assert not distance.judge_binary_snippet(False, 0.0, 0.0).errata
    # The column form off by 2 (a wrong sign, a row where the column belongs): fails.
    assert distance.judge_binary_snippet(True, 43.0, 2.0).verdict is Verdict.FAILS
    g = distance.judge_orientation(True, (24, 32), (32, 24))
    assert g.verdict is Verdict.HOLDS and [e.kind for e in g.errata] == [ErratumKind.SHAPE_SLIP] * 2
    assert not distance.judge_orientation(True, (32, 24), (32, 24)).errata
    assert distance.judge_orientation(False, (24, 32), (32, 24)).verdict is Verdict.FAILS


def test_distance_claims_carry_their_reading_apart_from_the_quote():
    from notes import text as notes_text

    for claim in distance.CASE.claims:
        assert notes_text.not_verbatim(claim.quote, claim.file) == [], claim.id
        assert claim.reading, claim.id
