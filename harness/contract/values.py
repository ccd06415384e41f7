"""The kinds of value a record's fields hold in a results file, each a reader ``(value, where) ->
value`` for `harness.contract.codec.field(read=...)`: it checks one JSON value, converts it to what
the record holds, and raises `RecordError` saying what is wrong at `where` (the field's JSON path).
"""

from __future__ import annotations

import enum
import math
from typing import Callable, Mapping

from harness.contract.codec import RecordError


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past float's range, which JSON allows
        return False


def text(value, where: str) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{where} is not text: {value!r:.60}")
    return value


def text_or_empty(value, where: str) -> str:
    """Text where a writer may have left null for none."""
    return "" if value is None else text(value, where)


def text_or_none(value, where: str) -> str | None:
    return None if value is None else text(value, where)


def texts(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError(f"{where} is not a list of text: {value!r:.60}")
    return tuple(value)


def truth(value, where: str) -> bool:
    """A yes/no: true or false (null reads as false, as an absent key does)."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RecordError(f"{where} is {value!r:.30}, not true or false")
    return value


def flag_or_none(value, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise RecordError(f"{where} is {value!r:.30}, not true, false or null")
    return value


def one_of(*choices) -> Callable:
    """A reader of a value that is one of `choices`."""

    def read(value, where: str):
        if value not in choices:
            raise RecordError(f"{where} is {value!r:.30}, not one of {choices}")
        return value

    return read


def member_of(kind: type[enum.Enum], null: bool = False) -> Callable:
    """A reader of an enum member by its value; None too where `null`."""

    def read(value, where: str):
        if value is None and null:
            return None
        try:
            return kind(value)
        except ValueError:
            raise RecordError(f"{where} is {value!r:.30}, not one of {[k.value for k in kind]}") from None

    return read


def obj(value, where: str) -> Mapping | None:
    """A JSON object kept as it is (what a record carries without reading into it), or None."""
    if value is not None and not isinstance(value, Mapping):
        raise RecordError(f"{where} is {value!r:.30}, not an object")
    return value


def mapping(value, where: str) -> dict:
    """A JSON object, copied; null reads as empty."""
    return dict(obj(value, where) or {})


def size(value, where: str) -> dict:
    """{size parameter: value}."""
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and _is_number(v) for k, v in value.items()
    ):
        raise RecordError(f"{where} is not a mapping of names to numbers: {value!r:.60}")
    return dict(value)


def texts_by_name(value, where: str) -> dict[str, str]:
    out = mapping(value, where)
    for name, v in out.items():
        text(v, f"{where}.{name}")
    return out


def counts_by_name(value, where: str) -> dict[str, int]:
    out = mapping(value, where)
    for name, v in out.items():
        if not _is_number(v) or not _finite(v) or v != int(v) or v < 0:
            raise RecordError(f"{where}.{name} is {v!r:.30}, not a count")
        out[name] = int(v)
    return out


def whole_or_none(value, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise RecordError(f"{where} is {value!r:.30}, not a whole number or null")
    return value


def tier(value, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or value not in (1, 2, 3)):
        raise RecordError(f"{where} is {value!r:.20}, not 1, 2 or 3")
    return value


def line(value, where: str) -> int:
    """A 1-based line number; 0 (or null) where none was found."""
    value = value or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(f"{where} is {value!r:.30}, not a line number")
    return value


def non_negative(value, where: str):
    """A finite number ≥ 0 (a count, a cost, an error), kept as written, or None."""
    if value is not None and not (_is_number(value) and _finite(value) and value >= 0):
        raise RecordError(f"{where} is {value!r:.30}, not a finite number ≥ 0")
    return value


def non_negative_float(value, where: str) -> float | None:
    value = non_negative(value, where)
    return None if value is None else float(value)


def fraction(value, where: str) -> float | None:
    """A tolerance: None, or a number in (0, 1). NaN would turn the gate off (every comparison with
    it false), 1 or more allows any drop, 0 or less none at all."""
    if value is None:
        return None
    if not _is_number(value) or not 0 < value < 1:
        raise RecordError(f"{where} is {value!r:.30}; a tolerance is a number in (0, 1)")
    return float(value)


def rounds(value, where: str) -> tuple[float, ...]:
    """One side's per-round seconds: at least one, each positive and finite."""
    if not isinstance(value, list) or not all(_is_number(v) for v in value):
        raise RecordError(f"{where} is not a list of numbers")
    if not value:
        raise RecordError(f"{where} is an empty list: a pair timed no round")
    times = tuple(float(v) for v in value)
    if not all(0 < t < math.inf for t in times):
        raise RecordError(f"{where} holds a time that is not positive and finite")
    return times


def _seconds_by_side(value, where: str, signed: bool) -> dict[str, float]:
    out = {}
    for side, seconds in mapping(value, where).items():
        if not _is_number(seconds) or not _finite(seconds) or (seconds <= 0 and not signed):
            raise RecordError(f"{where}.{side} is {seconds!r:.30}; seconds are a finite number")
        out[str(side)] = float(seconds)
    return out


def seconds_by_side(value, where: str) -> dict[str, float]:
    """{side: seconds}, each positive and finite."""
    return _seconds_by_side(value, where, signed=False)


def offsets_by_side(value, where: str) -> dict[str, float]:
    """{side: seconds}, finite, of either sign: a fitted intercept may come out a little below 0
    on noise."""
    return _seconds_by_side(value, where, signed=True)
