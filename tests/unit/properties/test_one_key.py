"""A point's key is described once: `harness.contract.record.KEY_COLUMNS`, derived from `PointKey`'s
fields, is what every table of the reports keys and groups by; no module outside the contract lists
the key's columns itself (DESIGN.md, "One key, derived once")."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from harness.contract import record
from tests import paths

ROOT = paths.ROOT
# Literal lists that hold every key column by design, each with why it cannot be derived.
SCHEMAS = {
    # summary.csv's columns in the order its readers have always read them: the key's columns sit
    # among the others (part before the size, x between the size and the dtype).
    ("reports/summary.py", "SUMMARY_COLUMNS"),
}


def test_the_key_is_pointkeys_own_fields_in_the_order_the_tables_list_them():
    assert record.KEY_COLUMNS == ("case", "size_label", "dtype", "device")
    assert set(record.KEY_COLUMNS) <= {f.name for f in fields(record.PointKey)}
    assert record.WITHIN_CASE == ("size_label", "dtype", "device")


def key_lists(source: str) -> list[tuple[int, str]]:
    """(line, the name it is assigned to or '') of each literal list, tuple or set of strings that
    names every column of the key."""
    found = []
    tree = ast.parse(source)
    named = {
        id(node.value): target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if set(record.KEY_COLUMNS) <= names:
                found.append((node.lineno, named.get(id(node), "")))
    return found


def test_no_module_outside_the_contract_lists_the_keys_columns():
    files = [p for package in ("reports", "plan", "suite", "harness") for p in (ROOT / package).rglob("*.py")]
    wrong = [
        f"{rel}:{line} {name}".rstrip()
        for path in files
        if (rel := path.relative_to(ROOT).as_posix()).split("/")[:2] != ["harness", "contract"]
        for line, name in key_lists(path.read_text(encoding="utf-8"))
        if (rel, name) not in SCHEMAS
    ]
    assert not wrong, (
        "the key's columns listed again (use harness.contract.record.KEY_COLUMNS):\n" + "\n".join(wrong)
    )


def test_a_planted_key_list_is_caught():
    source = (
        'KEYS = ["machine", "case", "size_label", "dtype", "device", "timing_mode"]\n'
        'def f(x):\n    return x.groupby(("case", "size_label", "dtype", "device"))\n'
        'PANELS = ["device", "dtype"]\n'
    )
    assert key_lists(source) == [(1, "KEYS"), (3, "")]


def test_the_schemas_kept_literal_still_exist():
    for rel, name in SCHEMAS:
        assert (rel and name) and any(n == name for _, n in key_lists(Path(ROOT / rel).read_text())), (
            rel,
            name,
        )
