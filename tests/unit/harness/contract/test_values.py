"""The readers of a record's fields (harness/contract/values.py): each gives back what the record
holds for a value that fits, and for one that does not, a `RecordError` that names the field and
says what it should be."""

from __future__ import annotations

import math

import pytest

from harness.contract import values
from harness.contract.claims import ClaimKind, Verdict
from harness.contract.codec import RecordError

FITS = [
    (values.text, "a", "a"),
    (values.text_or_empty, None, ""),
    (values.text_or_none, None, None),
    (values.texts, ["a", "b"], ("a", "b")),
    (values.texts, None, ()),
    (values.truth, True, True),
    (values.truth, None, False),
    (values.whole_or_none, 3, 3),
    (values.flag_or_none, None, None),
    (values.one_of("rule", "context"), "context", "context"),
    (values.member_of(ClaimKind), "speed", ClaimKind.SPEED),
    (values.member_of(Verdict, null=True), None, None),
    (values.obj, {"a": [1]}, {"a": [1]}),
    (values.mapping, None, {}),
    (values.size, {"n": 4, "p": 0.5}, {"n": 4, "p": 0.5}),
    (values.texts_by_name, {"slow": "no graph"}, {"slow": "no graph"}),
    (values.counts_by_name, {"fast": 32.0}, {"fast": 32}),
    (values.tier, 2, 2),
    (values.line, None, 0),
    (values.non_negative, 7, 7),  # kept as written: an integer count stays one
    (values.non_negative_float, 0, 0.0),
    (values.fraction, 0.05, 0.05),
    (values.rounds, [1, 2e-3], (1.0, 2e-3)),
    (values.seconds_by_side, {"fast": 1e-6}, {"fast": 1e-6}),
    (values.offsets_by_side, {"fast": -1e-7}, {"fast": -1e-7}),
]


@pytest.mark.parametrize("read, value, held", FITS, ids=lambda x: getattr(x, "__name__", None))
def test_a_value_that_fits_is_what_the_record_holds(read, value, held):
    got = read(value, "f")
    assert got == held and type(got) is type(held)


DOES_NOT_FIT = [
    (values.text, None, "f is not text: None"),
    (values.text_or_empty, 3, "f is not text: 3"),
    (values.text_or_none, ["a"], "f is not text"),
    (values.texts, "cpu", "f is not a list of text: 'cpu'"),
    (values.flag_or_none, "yes", "f is 'yes', not true, false or null"),
    (values.one_of("rule", "context"), "ruling", r"f is 'ruling', not one of \('rule', 'context'\)"),
    (values.member_of(ClaimKind), "louder", r"f is 'louder', not one of \['correctness'"),
    (values.member_of(Verdict), None, "f is None, not one of"),
    (values.obj, "busy", "f is 'busy', not an object"),
    (values.mapping, [1], r"f is \[1\], not an object"),
    (values.size, {"n": "4"}, "f is not a mapping of names to numbers"),
    (values.size, None, "f is not a mapping of names to numbers: None"),
    (values.size, {"n": True}, "f is not a mapping of names to numbers"),
    (values.texts_by_name, {"slow": 3}, r"f\.slow is not text: 3"),
    (values.counts_by_name, {"fast": 2.5}, r"f\.fast is 2.5, not a count"),
    (values.counts_by_name, {"fast": math.inf}, r"f\.fast is inf, not a count"),
    (values.tier, 4, "f is 4, not 1, 2 or 3"),
    (values.line, -1, "f is -1, not a line number"),
    (values.line, True, "f is True, not a line number"),
    (values.non_negative, -5, "f is -5, not a finite number ≥ 0"),
    (values.non_negative, math.nan, "f is nan"),
    (values.non_negative, 10**400, "not a finite number"),  # past float's range: not a crash
    (values.non_negative_float, "1", "f is '1'"),
    (values.fraction, 1, r"f is 1; a tolerance is a number in \(0, 1\)"),
    (values.fraction, math.nan, "f is nan; a tolerance"),
    (values.rounds, [], "f is an empty list: a pair timed no round"),
    (values.rounds, ["1e-3"], "f is not a list of numbers"),
    (values.rounds, [0.0], "f holds a time that is not positive and finite"),
    (values.seconds_by_side, {"fast": 0}, r"f\.fast is 0; seconds are a finite number"),
    (values.offsets_by_side, {"fast": math.inf}, r"f\.fast is inf"),
    (values.offsets_by_side, "x", "f is 'x', not an object"),
]


@pytest.mark.parametrize("read, value, message", DOES_NOT_FIT, ids=lambda x: getattr(x, "__name__", None))
def test_a_value_that_does_not_fit_is_named_and_said_what_it_should_be(read, value, message):
    with pytest.raises(RecordError, match=message):
        read(value, "f")


def test_yes_no_whole_numbers_and_tiers_take_their_own_type_only():
    assert values.truth(True, "w") is True and values.truth(None, "w") is False
    for bad in ("false", "no", 0, 1):
        with pytest.raises(RecordError, match=r"^w is .*not true or false"):
            values.truth(bad, "w")
    assert values.whole_or_none(7, "w") == 7 and values.whole_or_none(None, "w") is None
    for bad in (True, 1.5, "7"):
        with pytest.raises(RecordError, match="not a whole number"):
            values.whole_or_none(bad, "w")
    for bad in (True, "2", 4):
        with pytest.raises(RecordError, match="not 1, 2 or 3"):
            values.tier(bad, "w")
