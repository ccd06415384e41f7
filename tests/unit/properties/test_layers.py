"""The layers point one way (DESIGN.md, 'The flow of data'): cases → plan → suite, with harness
below the cases and reports reading only the results. An import that runs back up is a failure."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests import paths

ROOT = paths.ROOT
# package → the packages of this project it must never import
FORBIDDEN = {
    "harness": {"notes", "cases", "plan", "suite", "reports"},
    # The notes engine sits between the harness's contract and the cases, which read the notes from it.
    "notes": {"cases", "plan", "suite", "reports"},
    "cases": {"plan", "suite", "reports"},
    "plan": {"suite", "reports"},
    "reports": {"notes", "cases", "plan", "suite", "torch", "pytest"},
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
    "collection",
    "conftest",
    "estimate",
    "fanout",
    "isolation_plugin",
    "manifest",
    "options",
    "pair_rounds",
    "persist",
    "progress_plugin",
    "recorder",
    "shard_plugin",
    "versions",
    "worker_reports",
    "xdist_worker",
)


def _mirrored_test(path: Path) -> Path | None:
    """The unit-test file a module of harness/, notes/, cases/ (its helpers and launch machinery
    included), plan/, reports/ or the glue has: `tests/unit/` then its own path with `test_` before
    its name; a package's face (`__init__.py`) that defines something is tested in
    `test_<package>.py` beside its rooms' tests, `__main__.py` in `test_main.py`; a face that only
    re-exports needs none."""
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
    found = [
        p for layer in ("harness", "notes", "cases", "plan", "reports") for p in (ROOT / layer).rglob("*.py")
    ]
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


# ---- no import circle, call-time imports included -------------------------------------------------

PACKAGES = ("harness", "notes", "cases", "plan", "suite", "reports")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run_imports(tree: ast.AST):
    """Every import a module can run, at import time or inside a function; not the ones under
    `if TYPE_CHECKING:`, which never run."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (i for n in node.orelse for i in _run_imports(n))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _run_imports(node)


def import_graph(sources: dict[str, str], packages: set[str]) -> dict[str, set[str]]:
    """module → the project's modules importing it runs: the module named, and each package face
    on the way to it that the importer does not sit inside (`from reports.gate.model import x` run
    from outside `reports.gate` runs `reports/gate/__init__.py` first). ``sources``: module name →
    its text; ``packages``: the names that are a package's `__init__`."""
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        here = name if name in packages else name.rpartition(".")[0]
        targets = []
        for node in _run_imports(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
                continue
            base = node.module or ""
            if node.level:
                anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{anchor}.{base}" if base else anchor
            targets += [base] + [f"{base}.{alias.name}" for alias in node.names]
        reached = set()
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in sources and prefix != name and not name.startswith(prefix + "."):
                    reached.add(prefix)
        graph[name] = reached
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each set of modules that reach one another (Tarjan's strongly connected
    components of more than one module), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(start: str) -> None:
        # Iterative, so a deep chain of imports cannot reach Python's recursion limit.
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


@functools.cache
def project_graph() -> dict[str, set[str]]:
    """The project's import graph, read once per process (three tests read it; none changes it)."""
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    sources = {_module_name(p): p.read_text(encoding="utf-8") for p in files}
    return import_graph(sources, {_module_name(p) for p in files if p.name == "__init__.py"})


def test_no_import_circle_even_through_an_import_made_at_call_time():
    assert circles(project_graph()) == []


def test_a_planted_call_time_circle_is_caught():
    sources = {
        "r": "",
        "r.gate": "from r.gate.cli import run\n",
        "r.gate.cli": "def run():\n    from r.store import baseline\n",
        "r.gate.model": "from r.gate import cli\n",
        "r.store": "def add():\n    from r.gate import model\n",
        "r.load": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from r.store import add\n",
    }
    graph = import_graph(sources, {"r", "r.gate"})
    assert graph["r.store"] == {"r.gate", "r.gate.model"}  # the face runs first
    assert graph["r.gate.model"] == {"r.gate.cli"}  # from inside, the face is already running
    assert graph["r.load"] == set()
    assert circles(graph) == [["r.gate", "r.gate.cli", "r.gate.model", "r.store"]]


# ---- the reports on three floors ----------------------------------------------------------------
# Judging (pure: results in, tables and verdicts out), storage (the history: `store` keeps, `ingest`
# derives a run's rows through the judging), commands (what a user runs: they read files and the
# history, judge, write and exit). A floor imports only its own and the ones below it.
COMMANDS = {
    "reports.__main__",
    "reports.gate.cli",
    "reports.history.replay_gate",
    "reports.history.compare_detectors",
}
FLOORS = ("judging", "storage", "commands")


def reports_floor(module: str) -> str:
    if module in COMMANDS:
        return "commands"
    if module == "reports.history" or module.startswith("reports.history."):
        return "storage"
    return "judging"


def floor_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({reports_floor(module)}) imports {target} ({reports_floor(target)})"
        for module, targets in graph.items()
        if module.startswith("reports")
        for target in targets
        if target.startswith("reports")
        and FLOORS.index(reports_floor(target)) > FLOORS.index(reports_floor(module))
    )


def test_the_reports_floors_import_only_downward():
    assert floor_violations(project_graph()) == []


def test_the_store_keeps_and_reads_only():
    """The history's storage reads results files (`reports.load`) and nothing else of the reports:
    what it keeps of a run beside the file is derived in `reports.history.ingest`."""
    reached = {t for t in project_graph()["reports.history.store"] if t.startswith("reports")}
    assert reached <= {"reports.load"}


def test_a_planted_floor_violation_is_caught():
    graph = {"reports.gate.model": {"reports.history.store"}, "reports.history.store": {"reports.gate.cli"}}
    assert floor_violations(graph) == [
        "reports.gate.model (judging) imports reports.history.store (storage)",
        "reports.history.store (storage) imports reports.gate.cli (commands)",
    ]


def test_the_gate_face_exports_its_public_api_only():
    import reports.gate

    private = [name for name in reports.gate.__all__ if name.startswith("_")]
    assert not private, private
    assert set(reports.gate.__all__) <= set(vars(reports.gate))
