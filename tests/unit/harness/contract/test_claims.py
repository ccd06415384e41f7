"""The claim vocabulary (harness/contract/claims.py): a claim, a finding and an erratum round-trip as
data; a claim needs an ID of letters, digits and '_' and the notes' words; a finding needs something
to say; an erratum is keyed by where it is once located; bad data is a one-line `RecordError`."""

from __future__ import annotations

import json

import pytest

from harness.contract.claims import Claim, ClaimKind, Erratum, ErratumKind, Finding, RecordError, Verdict


def _round_trip(thing):
    return type(thing).from_data(json.loads(json.dumps(thing.to_data())))


def test_a_claim_round_trips_and_needs_an_id_and_the_notes_words():
    claim = Claim("faster", "the matmul way is faster", "001", ClaimKind.SPEED, checks=("c",), stand_in="x")
    assert _round_trip(claim) == claim
    assert "stand_in" not in Claim("a", "q", "001", "speed").to_data()  # the kind read from its value too
    with pytest.raises(ValueError, match="letters, digits"):
        Claim("no spaces", "q", "001", ClaimKind.SPEED)
    with pytest.raises(ValueError, match="no quote"):
        Claim("a", " ", "001", ClaimKind.SPEED)
    with pytest.raises(RecordError, match=r"claim\.kind is 'louder'"):
        Claim.from_data({"id": "a", "quote": "q", "kind": "louder"})


def test_a_finding_round_trips_with_its_errata_and_needs_something_to_say():
    erratum = Erratum(ErratumKind.TYPO, "torch.onehot", "no such name", "003", 12)
    finding = Finding(Verdict.FAILS, "observed", (erratum,))
    assert _round_trip(finding) == finding
    assert _round_trip(Finding(None, "", (erratum,))).verdict is None
    with pytest.raises(ValueError, match="needs a verdict"):
        Finding(None, "")
    with pytest.raises(RecordError, match=r"finding\.verdict is 'great'"):
        Finding.from_data({"verdict": "great"})


def test_an_erratum_is_keyed_by_where_it_is_once_located():
    located = Erratum(ErratumKind.TYPO, "q", "e", "003", 12)
    assert located.key == ("003", 12) and located.where == "003:12"
    loose = Erratum(ErratumKind.REMOVED_API, "q", "e")
    assert loose.key == (ErratumKind.REMOVED_API, "q") and loose.where == ""
    assert _round_trip(loose) == loose and "line" not in loose.to_data()
    with pytest.raises(RecordError, match="not a line number"):
        Erratum.from_data({"kind": "typo", "line": -1})
    with pytest.raises(RecordError, match=r"erratum\.kind is 'slip'"):
        Erratum.from_data({"kind": "slip"})
