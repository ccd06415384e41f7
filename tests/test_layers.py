"""The layers point one way (DESIGN.md, 'The flow of data'): cases → plan → suite, with harness
below the cases and reports reading only the results. An import that runs back up is a failure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package → the packages of this project it must never import
FORBIDDEN = {
    "harness": {"cases", "plan", "suite", "reports"},
    "cases": {"plan", "suite", "reports"},
    "plan": {"suite", "reports"},
    "reports": {"cases", "plan", "suite", "torch", "pytest"},
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_runs_back_up(package):
    wrong = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / package).rglob("*.py")
        for name in _imports(path) & FORBIDDEN[package]
    }
    assert not wrong, sorted(wrong)
