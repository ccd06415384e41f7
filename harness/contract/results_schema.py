"""The results file's JSON Schema (``results.schema.json`` beside this module, draft 2020-12) and
the one check every reader makes with it before reading a field: `problem` names the first field
that does not fit, in one line (its JSON path, what it holds, what was expected).

The schema describes what the readers use (reports/load.py, the gate, the history,
plan/estimate.py) with its types, ranges and enums, for schema versions 1 to 4; keys it does not
name are allowed. The validator is compiled once per process. Two things here go beyond a plain
draft 2020-12 validator, neither changing what a valid document is:

* a ``number`` is finite: Python's ``json`` reads ``NaN`` and ``Infinity``, which are not JSON
  numbers; a huge integer is caught by the schema's own bounds;
* the ``$ref`` s are resolved once, and a plain field (a type, a range, an enum) is checked in
  place, a list of per-round times (``#/$defs/seconds``: most of a 16 MB results file) in one pass
  over its values; the validator's own walk runs only where that check fails, so the error still
  names the field. 0.1 s for the 5.2 MB reference run (reports/reference/), whose parse takes 0.06.

Plain Python and `jsonschema`, imported on the first check: neither torch nor pytest.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

from harness.contract import record

SCHEMA_PATH = Path(__file__).with_name("results.schema.json")
_LARGEST = 1.7976931348623157e308  # the largest finite float: a JSON number beyond it is no number
_TYPES = {
    "object": "an object",
    "array": "a list",
    "string": "text",
    "number": "a finite number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=None)
def schema() -> dict:
    """The schema, as shipped in the package."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _finite_number(checker, instance) -> bool:
    if isinstance(instance, bool) or not isinstance(instance, (int, float)):
        return False
    return isinstance(instance, int) or math.isfinite(instance)


def _inlined(tree, defs: dict, done: dict):
    """`tree` with each ``{"$ref": "#/$defs/<name>"}`` replaced by that definition (one shared
    object per name), but for the recursive ``rule``: the same schema, without a lookup per use."""
    if isinstance(tree, list):
        return [_inlined(t, defs, done) for t in tree]
    if not isinstance(tree, dict):
        return tree
    ref = tree.get("$ref", "")
    if len(tree) == 1 and ref.startswith("#/$defs/") and ref != "#/$defs/rule":
        name = ref.removeprefix("#/$defs/")
        if name not in done:
            done[name] = {}
            done[name].update(_inlined(defs[name], defs, done))
        return done[name]
    return {k: _inlined(v, defs, done) for k, v in tree.items()}


_PLAIN = {"type", "description", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum"}
_PYTHON = {str: "string", dict: "object", list: "array", bool: "boolean", type(None): "null"}


def _quick_check(subschema):
    """A predicate that is true only where `subschema` holds (false may still hold: then the
    validator decides), for a schema of a type, a range and an enum alone; else None."""
    if subschema is True:
        return lambda value: True
    if not isinstance(subschema, dict) or not subschema.keys() <= _PLAIN:
        return None
    types = set(_as_list(subschema.get("type", list(_TYPES))))
    enum = subschema.get("enum")
    low, high = subschema.get("minimum", -_LARGEST), subschema.get("maximum", _LARGEST)
    above, below = subschema.get("exclusiveMinimum"), subschema.get("exclusiveMaximum")

    def check(value) -> bool:
        kind = type(value)
        if enum is not None and (kind is bool or kind is dict or kind is list or value not in enum):
            return False
        if kind is int or kind is float:
            return (
                ("number" in types or ("integer" in types and kind is int))
                and low <= value <= high  # false for NaN
                and (above is None or value > above)
                and (below is None or value < below)
            )
        return _PYTHON.get(kind) in types

    return check


def _quick_checks(tree, found=None) -> dict:
    """{id(subschema): its quick check} for every field schema of `tree` that has one."""
    found = {} if found is None else found
    if isinstance(tree, list):
        for t in tree:
            _quick_checks(t, found)
    elif isinstance(tree, dict):
        for key, value in tree.items():
            if key in ("properties", "additionalProperties", "items"):
                for subschema in value.values() if key == "properties" else [value]:
                    if id(subschema) not in found and (check := _quick_check(subschema)) is not None:
                        found[id(subschema)] = check
            _quick_checks(value, found)
    return found


@functools.lru_cache(maxsize=None)
def validator():
    """The compiled validator (draft 2020-12, no format checks), made once."""
    from jsonschema import Draft202012Validator, validators

    Draft202012Validator.check_schema(schema())
    done: dict = {}
    inlined = _inlined(schema(), schema()["$defs"], done)
    seconds = done["seconds"]
    items = Draft202012Validator.VALIDATORS["items"]
    properties = Draft202012Validator.VALIDATORS["properties"]
    additional = Draft202012Validator.VALIDATORS["additionalProperties"]
    quick = _quick_checks(inlined)

    def rounds_at_once(validator, subschema, instance, where):
        # Per-round times: one pass over the values; the item-by-item walk only where one fails.
        if (
            subschema is seconds
            and isinstance(instance, list)
            and all((type(t) is float or type(t) is int) and 0 < t <= _LARGEST for t in instance)
        ):
            return
        check = quick.get(id(subschema))
        if check is not None and isinstance(instance, list) and all(check(v) for v in instance):
            return
        yield from items(validator, subschema, instance, where)

    def fields_at_once(validator, subschemas, instance, where):
        # An object's plain fields (a type, a range, an enum) checked in place; the walk into a
        # field only where it is more than that, or where the check in place fails.
        if not isinstance(instance, dict):
            return
        deeper = {}
        for name, subschema in subschemas.items():
            if name in instance:
                check = quick.get(id(subschema))
                if check is None or not check(instance[name]):
                    deeper[name] = subschema
        if deeper:
            yield from properties(validator, deeper, instance, where)

    def other_fields_at_once(validator, subschema, instance, where):
        check = quick.get(id(subschema))
        if (
            check is not None
            and isinstance(instance, dict)
            and not where.get("properties")
            and all(check(v) for v in instance.values())
        ):
            return
        yield from additional(validator, subschema, instance, where)

    cls = validators.extend(
        Draft202012Validator,
        validators={
            "items": rounds_at_once,
            "properties": fields_at_once,
            "additionalProperties": other_fields_at_once,
        },
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("number", _finite_number),
    )
    return cls(inlined, format_checker=None)


def problem(doc) -> str | None:
    """None where `doc` fits the schema, else one line naming the first field that does not: its
    JSON path (``pairs[3].fast_s[0]``), what it holds and what was expected. A file of a newer
    schema version than this reader's is named as such before any of its fields."""
    suite = doc.get("suite") if isinstance(doc, dict) else None
    version = suite.get("schema_version") if isinstance(suite, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > record.SCHEMA_VERSION:
        return (
            f"suite.schema_version is {_shown(version)}: results schema version newer than this "
            f"reader's ({record.SCHEMA_VERSION}); update the suite to read it"
        )
    error = next(validator().iter_errors(doc), None)
    return None if error is None else describe(error)


def json_path(path) -> str:
    """``pairs[3].fast_s[0]``; a key that is not a name in brackets (``cases['a.b'].rule``)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _NAME.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part[:60]!r}]"
    return out or "the document"


def _shown(value) -> str:
    """A value as the message shows it: short, on one line."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    text = repr(value)
    if len(text) <= 40:
        return text
    if isinstance(value, str):
        return text[:38] + "…'"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} keys"
    return text[:39] + "…"


def _types(names) -> str:
    names = [names] if isinstance(names, str) else list(names)
    return " or ".join(_TYPES.get(n, n) for n in names)


def _innermost(error):
    """Where an anyOf failed on every branch: the one branch the value has the type of, followed
    down to its own error (a sub-field, a range); the anyOf itself where the value has none of
    the branches' types (then also the types) or more than one branch could be meant."""
    while error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict = {}
        for e in error.context:
            branches.setdefault(e.relative_schema_path[0], []).append(e)
        meant = [
            errors
            for errors in branches.values()
            if not any(e.validator == "type" and not e.relative_path for e in errors)
        ]
        if not meant:
            types = {
                t
                for e in error.context
                if e.validator == "type" and not e.relative_path
                for t in _as_list(e.validator_value)
            }
            return error, sorted(types, key=_order)
        if len(meant) > 1:
            return error, None
        error = meant[0][0]
    return error, None


def _as_list(value) -> list:
    return [value] if isinstance(value, str) else list(value)


def _order(name: str) -> int:
    return list(_TYPES).index(name) if name in _TYPES else len(_TYPES)


def describe(error) -> str:
    """One line for a `jsonschema` error: the field's JSON path, what it holds, what was expected."""
    error, any_types = _innermost(error)
    where, value = json_path(error.absolute_path), error.instance
    keyword, limit = error.validator, error.validator_value
    sub = error.schema if isinstance(error.schema, dict) else {}
    shown = _shown(value)
    if any_types is not None:
        text = f"{where} is {shown}, not {_types(any_types)}"
    elif keyword in ("anyOf", "oneOf"):
        text = f"{where} is {shown}"
    elif keyword == "type":
        text = f"{where} is {shown}, not {_types(limit)}"
    elif keyword in ("enum", "const"):
        allowed = limit if keyword == "enum" else [limit]
        text = (
            f"{where} is {shown}, not one of {', '.join(json.dumps(a, ensure_ascii=False) for a in allowed)}"
        )
    elif keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        relation = {
            "minimum": "below the minimum",
            "exclusiveMinimum": "not above",
            "maximum": "above the maximum",
            "exclusiveMaximum": "not below",
        }[keyword]
        if isinstance(limit, float) and abs(limit) == _LARGEST:
            text = f"{where} is {shown}, not a finite number"
        else:
            text = (
                f"{where} is {shown}, {relation} {limit:g}"
                if isinstance(limit, float)
                else (f"{where} is {shown}, {relation} {limit}")
            )
    elif keyword == "required":
        missing = [k for k in limit if isinstance(value, dict) and k not in value]
        text = f"{where} has no {missing[0] if missing else limit[0]!r}"
    elif keyword == "additionalProperties":
        known = list(sub.get("properties", {}))
        unknown = [k for k in value if k not in known] if isinstance(value, dict) else []
        text = (
            f"{where} has an unknown key {_shown(unknown[0]) if unknown else '?'} (known: {', '.join(known)})"
        )
    elif keyword == "minItems" and isinstance(value, list) and not value:
        text = f"{where} is an empty list"
    elif keyword == "minLength" and value == "":
        text = f"{where} is empty text"
    elif keyword == "pattern":
        text = f"{where} is {shown}, which does not match {limit}"
    else:
        text = f"{where} is {shown}: {error.message[:120]}"
    if sub.get("description"):
        text += f"; expected {sub['description']}"
    return " ".join(text.split())  # one line, whatever a key held
