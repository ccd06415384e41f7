"""Records as JSON data: one walk over a dataclass's fields (`encode`, `decode`), steered by what
each field declares with `field(...)` (kept in the dataclass field's metadata):

* ``key``: its JSON key where that is not the field's name; a function of the record where the key
  depends on another field (its ``aliases`` are then the keys read back, the first set one winning);
* ``read``: ``(value, where) -> value``, which checks and converts a key that is present and raises
  `RecordError` naming `where` (harness.contract.values holds them); ``write``: the other way;
* ``record`` / ``records``: the value is a nested record / a list of them (a tuple in the record);
* ``omit``: the key is left out on write where the value is falsy (empty, None, 0);
* ``missing``: what an absent key reads as, where that is not the field's default; a field with
  neither is required, and `decode` names the keys a document lacks.

`RecordError` is here because every reader of a results document reads through this walk.

A record names where it is (``where``: a JSON path such as ``pairs[3]``); a field's error says
``{where}.{key}``, as the results' schema check (harness.contract.results_schema) names fields.

Why not a library: dacite only reads (no writing, no per-field key or omission); cattrs writes and
reads, with renames and omission, but each field here checks its value with a message that names
where in the file it is: in cattrs a hook per field, and its ExceptionGroups turned back into one
line. That is more code than this walk, and a dependency for it.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from typing import Any, Callable, Mapping


class RecordError(ValueError):
    """A results document that does not fit the schema; the message is one line."""


def field(
    *,
    key: str | Callable[[Any], str] | None = None,
    aliases: tuple[str, ...] = (),
    read: Callable[[Any, str], Any] | None = None,
    write: Callable[[Any], Any] | None = None,
    record: type | None = None,
    records: type | None = None,
    omit: bool = False,
    missing: Any = dataclasses.MISSING,
    metadata: Mapping | None = None,
    **kwargs,
):
    """A dataclass field that says how it travels as JSON (the vocabulary above); `kwargs` are
    dataclasses.field's (default, default_factory, kw_only), `metadata` any other of its own."""
    codec = {"key": key, "aliases": aliases, "read": read, "write": write, "record": record}
    codec |= {"records": records, "omit": omit, "missing": missing}
    return dataclasses.field(metadata={**(metadata or {}), "codec": codec}, **kwargs)


_PLAIN = {"key": None, "aliases": (), "read": None, "write": None, "record": None, "records": None}
_PLAIN |= {"omit": False, "missing": dataclasses.MISSING}


def _spec(f: dataclasses.Field) -> dict:
    return f.metadata.get("codec", _PLAIN)


def plain(value):
    """A value as JSON holds it: records, enums and tuples as their data, mappings copied."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def encode(record) -> dict:
    """The record's JSON object: its fields in declaration order, under their keys."""
    data = {}
    for f in dataclasses.fields(record):
        spec, value = _spec(f), getattr(record, f.name)
        if spec["omit"] and not value:
            continue
        key = spec["key"] or f.name
        data[key(record) if callable(key) else key] = (
            spec["write"](value) if spec["write"] and value is not None else plain(value)
        )
    return data


def decode(cls, data, where: str):
    """The `cls` record that `data` (a JSON object at `where`) holds; RecordError says what is
    wrong and where. A ValueError the record's own checks raise is told at `where` too."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where} is {data!r:.60}, not an object")
    values, lacking = {}, []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        spec = _spec(f)
        key = spec["key"] if isinstance(spec["key"], str) else f.name
        if spec["aliases"]:
            # The first alias with a name in it; an empty one only where none has (every one is
            # then read, so a wrong type is named rather than skipped).
            present = [k for k in spec["aliases"] if k in data]
            found = next((k for k in present if data[k] not in ("", None)), present[0] if present else None)
        else:
            found = key if key in data else None
        if found is not None:
            values[f.name] = _read(spec, data[found], f"{where}.{found}")
        elif spec["missing"] is not dataclasses.MISSING:
            values[f.name] = copy.copy(spec["missing"])  # a record never shares a mutable default
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            lacking.append(key)
    if lacking:
        raise RecordError(f"{where} has no {', '.join(lacking)}")
    try:
        return cls(**values)
    except RecordError:
        raise
    except ValueError as e:
        raise RecordError(f"{where}: {e}") from None


def _read(spec: dict, value, where: str):
    if spec["record"] is not None:
        return decode(spec["record"], value, where) if value is not None else None
    if spec["records"] is not None:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise RecordError(f"{where} is not a list")
        return tuple(decode(spec["records"], item, f"{where}[{i}]") for i, item in enumerate(value))
    return spec["read"](value, where) if spec["read"] else value
