"""The records' JSON walk (harness/contract/codec.py): each word a field may declare does what the
module says, on write and on read, and a document that does not fit is one `RecordError` that
says where."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest

from harness.contract import codec
from harness.contract.codec import RecordError


class Colour(str, enum.Enum):
    RED = "red"


def _positive(value, where):
    if not isinstance(value, int) or value <= 0:
        raise RecordError(f"{where} is {value!r}, not a positive integer")
    return value


@dataclass(frozen=True)
class Leaf:
    n: int = codec.field(read=_positive)


def _label_key(thing) -> str:
    return "loud" if thing.colour is Colour.RED else "quiet"


@dataclass(frozen=True)
class Thing:
    ident: str = codec.field(key="id")
    label: str = codec.field(key=_label_key, aliases=("loud", "quiet", "label"), missing="")
    count: int = codec.field(read=_positive, missing=1)
    colour: Colour | None = codec.field(read=lambda v, where: Colour(v), default=None)
    note: str = codec.field(omit=True, default="")
    leaf: Leaf | None = codec.field(record=Leaf, default=None)
    leaves: tuple[Leaf, ...] = codec.field(records=Leaf, default=())
    shout: str | None = codec.field(write=str.upper, read=lambda v, where: v.lower(), default="hi")
    tags: tuple[str, ...] = codec.field(read=lambda v, where: tuple(v), default=())
    sizes: dict = codec.field(missing={}, default_factory=dict)

    def __post_init__(self):
        if self.ident == "bad":
            raise ValueError("ident may not be 'bad'")


def test_a_record_is_written_field_by_field_under_its_keys():
    thing = Thing("t1", "x", 3, Colour.RED, leaf=Leaf(2), leaves=(Leaf(1), Leaf(5)), tags=("a",))
    assert list(codec.encode(thing).items()) == [
        ("id", "t1"),
        ("loud", "x"),  # the key the colour picks
        ("count", 3),
        ("colour", "red"),  # an enum as its value; "note", empty, is left out
        ("leaf", {"n": 2}),
        ("leaves", [{"n": 1}, {"n": 5}]),
        ("shout", "HI"),
        ("tags", ["a"]),  # a tuple as a list
        ("sizes", {}),
    ]
    assert "note" in codec.encode(Thing("t", "", 1, note="n")) and "quiet" in codec.encode(Thing("t", "", 1))


def test_write_is_not_applied_to_none():
    assert codec.encode(Thing("t", "", 1, shout=None))["shout"] is None


def test_a_record_reads_back_what_it_wrote():
    thing = Thing("t1", "x", 3, Colour.RED, "n", Leaf(2), (Leaf(1),), "hi", ("a",), {"n": 1})
    assert codec.decode(Thing, codec.encode(thing), "here") == thing
    assert codec.decode(Thing, {"id": "t", "label": "old"}, "here").label == "old"  # an alias


def test_an_absent_key_reads_as_missing_else_as_the_default():
    thing = codec.decode(Thing, {"id": "t"}, "here")
    assert (thing.label, thing.count, thing.colour, thing.leaves, thing.sizes) == ("", 1, None, (), {})
    other = codec.decode(Thing, {"id": "u"}, "here")
    assert thing.sizes is not other.sizes  # `missing` is copied, never shared between records


def test_a_nested_record_reads_null_as_none_and_an_empty_list_as_none_at_all():
    thing = codec.decode(Thing, {"id": "t", "leaf": None, "leaves": None}, "here")
    assert (thing.leaf, thing.leaves) == (None, ())


@pytest.mark.parametrize(
    "data, message",
    [
        ("x", "here is 'x', not an object"),
        ({}, "here has no id"),
        ({"id": "t", "count": 0}, r"here\.count is 0, not a positive integer"),
        ({"id": "t", "leaf": {"n": -1}}, r"here\.leaf\.n is -1"),
        ({"id": "t", "leaf": "x"}, r"here\.leaf is 'x', not an object"),
        ({"id": "t", "leaves": {"n": 1}}, r"here\.leaves is not a list"),
        ({"id": "t", "leaves": [{"n": 1}, {"n": 0}]}, r"here\.leaves\[1\]\.n is 0"),
        ({"id": "t", "leaves": [{}]}, r"here\.leaves\[0\] has no n"),
        ({"id": "bad"}, "here: ident may not be 'bad'"),  # the record's own check, told where
    ],
)
def test_a_document_that_does_not_fit_is_a_record_error_saying_where(data, message):
    with pytest.raises(RecordError, match=message):
        codec.decode(Thing, data, "here")


def test_a_value_is_plain_json():
    assert codec.plain({"a": (1, Colour.RED, Leaf(3))}) == {"a": [1, "red", {"n": 3}]}


def test_an_empty_value_of_the_wrong_type_is_refused_not_read_as_absent():
    from harness.contract import record

    outcome = {"case": "x.y", "kind": "check", "check": "c", "outcome": "passed"}
    with pytest.raises(RecordError, match=r"^here\.finding"):
        record.Outcome.from_data({**outcome, "finding": []}, "here")
    case = {"id": "x.y", "tier": 1}
    for key, bad in (("claims", {}), ("timed", "")):
        with pytest.raises(RecordError, match=rf"^here\.{key} is not a list"):
            record.CaseInfo.from_data({**case, key: bad}, "here")
    with pytest.raises(RecordError, match=r"^here\.check"):
        record.Outcome.from_data({**outcome, "check": 0}, "here")
