"""The layers point one way (DESIGN.md, 'The flow of data'): cases → plan → suite, with harness
below the cases and reports reading only the results. An import that runs back up is a failure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import paths

ROOT = paths.ROOT
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


# The harness's rooms, bottom first: a module imports only its own room and the rooms before it
# (harness/__init__.py says what each holds). `contract` is what reports/ reads: torch-free.
HARNESS_ROOMS = ("contract", "host", "measure", "machine", "run", "point")


def _rooms_imported(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "harness":
                continue
            if len(parts) > 1:
                found.add(parts[1])
            else:  # from harness import measure, machine (the faces)
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "harness" and len(parts) > 1:
                    found.add(parts[1])
    return found & set(HARNESS_ROOMS)


def room_violations(room: str, source: str) -> set[str]:
    """The rooms `source`, a module of `room`, imports though they sit above it."""
    allowed = set(HARNESS_ROOMS[: HARNESS_ROOMS.index(room) + 1])
    return _rooms_imported(source) - allowed


def test_the_harness_rooms_import_only_downward():
    wrong = [
        f"{path.relative_to(ROOT)} imports harness.{above}"
        for room in HARNESS_ROOMS
        for path in (ROOT / "harness" / room).rglob("*.py")
        for above in room_violations(room, path.read_text(encoding="utf-8"))
    ]
    assert not wrong, wrong


def test_a_planted_back_import_is_caught():
    assert room_violations("contract", "from harness.point import marks\n") == {"point"}
    assert room_violations("measure", "from harness import machine\n") == {"machine"}
    assert (
        room_violations("point", "from harness.contract import record\nimport harness.run.journal\n") == set()
    )


def test_no_module_sits_at_the_top_of_the_harness_and_the_contract_is_torch_free():
    assert sorted(p.name for p in (ROOT / "harness").glob("*.py")) == ["__init__.py"]
    assert sorted(
        p.name for p in (ROOT / "harness").iterdir() if p.is_dir() and p.name != "__pycache__"
    ) == sorted(HARNESS_ROOMS)
    for room in HARNESS_ROOMS:
        assert ast.get_docstring(ast.parse((ROOT / "harness" / room / "__init__.py").read_text())), room
    heavy = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / "harness" / "contract").rglob("*.py")
        for name in _imports(path) & {"torch", "pytest"}
    }
    assert not heavy, sorted(heavy)


# ---- the tests mirror the code ----------------------------------------------------------------------

# the pytest glue modules of suite/ (its test_*.py are the suite itself, tested by running it)
GLUE = (
    "cli",
    "conftest",
    "fanout",
    "isolation_plugin",
    "options",
    "pair_rounds",
    "persist",
    "progress_plugin",
    "recorder",
    "shard_plugin",
    "xdist_worker",
)


def _mirrored_test(path: Path) -> Path | None:
    """The unit-test file a module of harness/, plan/, reports/ or the glue has: `tests/unit/` then
    its own path with `test_` before its name; a package's face (`__init__.py`) that defines
    something is tested in `test_<package>.py` beside its rooms' tests, `__main__.py` in
    `test_main.py`; a face that only re-exports needs none."""
    rel = path.relative_to(ROOT)
    folder = ROOT / "tests" / "unit" / rel.parent
    if path.name == "__init__.py":
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in body):
            return None
        return folder / f"test_{rel.parent.name}.py"
    if path.name == "__main__.py":
        return folder / "test_main.py"
    return folder / f"test_{path.stem}.py"


def _modules() -> list[Path]:
    found = [p for layer in ("harness", "plan", "reports") for p in (ROOT / layer).rglob("*.py")]
    return sorted(found + [ROOT / "suite" / f"{name}.py" for name in GLUE])


def test_every_module_has_its_mirrored_unit_test_file():
    missing = [
        f"{module.relative_to(ROOT)} → {test.relative_to(ROOT)}"
        for module in _modules()
        if (test := _mirrored_test(module)) is not None and not test.is_file()
    ]
    assert not missing, "modules without their unit-test file:\n" + "\n".join(missing)


def test_the_glue_list_is_every_module_of_suite_but_its_tests():
    glue = {p.stem for p in (ROOT / "suite").glob("*.py") if p.name != "__init__.py"}
    assert glue - {p for p in glue if p.startswith("test_")} == set(GLUE)
