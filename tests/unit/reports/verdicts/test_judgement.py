"""How the verdicts of parts make a whole (reports/verdicts/judgement.py): across points a mix of
holds and fails depends, noise never does; a claim of several parts fails where any part fails; a
hedge holds where any part holds; a claim's parts, a red one among them, never read holds."""

from __future__ import annotations

from reports.verdicts.judgement import (
    COULD_NOT_JUDGE,
    DEPENDS,
    FAILS,
    HOLDS,
    NOT_MEASURED,
    Judgement,
    all_of,
    any_of,
    combine,
    verdict_of_parts,
)

H, F, D, N, C = (Judgement(v, v) for v in (HOLDS, FAILS, DEPENDS, NOT_MEASURED, COULD_NOT_JUDGE))


def test_combine_across_points_depends_on_what_tells_them_apart_never_on_noise():
    assert combine([H, H, N]).verdict == HOLDS
    assert combine([F, N]).verdict == FAILS
    assert combine([H, F]).verdict == DEPENDS
    assert combine([H, C]).verdict == COULD_NOT_JUDGE  # noise is never a condition
    assert combine([H, F, C]).verdict == DEPENDS  # the decided parts disagree already
    assert combine([N, N]).verdict == NOT_MEASURED
    assert combine([H, F]).evidence == "holds; fails"


def test_all_of_fails_where_any_measured_part_fails_and_any_of_holds_where_one_holds():
    assert all_of([H, F]).verdict == FAILS and all_of([H, H]).verdict == HOLDS
    assert all_of([H, N]).verdict == HOLDS and all_of([H, C]).verdict == COULD_NOT_JUDGE
    assert any_of([F, H]).verdict == HOLDS and any_of([F, H]).evidence.startswith("holds")
    assert any_of([F, F]).verdict == FAILS and any_of([N, N]).verdict == NOT_MEASURED


def test_a_claims_parts_fail_before_a_red_part_and_a_red_part_before_holds():
    assert verdict_of_parts([H, C, F]) == FAILS
    assert verdict_of_parts([H, C]) == COULD_NOT_JUDGE
    assert verdict_of_parts([H, D]) == DEPENDS and verdict_of_parts([]) == NOT_MEASURED


def test_the_notes_verdict_counts_the_errata():
    assert Judgement(HOLDS, "").notes_verdict == "correct"
    assert Judgement(HOLDS, "", errata=("e",)).notes_verdict == "1 erratum"
    assert Judgement(HOLDS, "", errata=("e", "f")).notes_verdict == "2 errata"
