"""Every finding is computed, never declared: every rule check decides through a pure judge
(`judge_*` in cases/), no verdict is written down outside one, and every judge has a test that
feeds it different observations. These guards keep a check that asserts and returns a constant,
or a new judge left untested, from landing."""

from __future__ import annotations

import ast
import functools
import inspect
import pathlib
import textwrap

from tests import paths

ROOT = paths.ROOT


def _judges() -> dict[str, str]:
    found = {}
    for path in sorted((ROOT / "cases").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("judge_"):
                found[f"{path.relative_to(ROOT)}::{node.name}"] = node.name
    return found


def test_every_judge_is_called_by_a_test():
    tests = "\n".join(
        p.read_text()
        for p in (ROOT / "tests").rglob("test_*.py")
        if p.resolve() != pathlib.Path(__file__).resolve()
    )
    missing = [where for where, name in _judges().items() if f"{name}(" not in tests]
    assert not missing, (
        f"judges no test calls (a different observation must give a different verdict): {missing}"
    )


def _check_functions():
    """(ID, check name, the function its `Check` runs) for every rule check the cases declare."""
    import cases

    for case in cases.all_cases():
        for name, check in case.checks.items():
            fn = check.fn
            while isinstance(fn, functools.partial):
                fn = fn.func
            yield case.id, name, fn


def _calls_a_judge(fn) -> bool:
    source = textwrap.dedent(inspect.getsource(fn))
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda inside a larger expression: its line alone does not parse
        return "judge_" in source
    names = {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
    }
    return any(name.startswith("judge_") for name in names)


def test_every_check_decides_through_a_judge():
    """A check observes; a pure `judge_*` function decides (CATALOG.md: computed, never declared).
    A check that calls none cannot be fed a contrary observation, so it could return a constant."""
    missing = [f"{case_id}:{name}" for case_id, name, fn in _check_functions() if not _calls_a_judge(fn)]
    assert not missing, f"checks that call no judge_* function: {missing}"


class _WrittenVerdicts(ast.NodeVisitor):
    """`Finding(Verdict.X, ...)` built outside a judge_* function: a verdict written down."""

    def __init__(self):
        self.stack, self.found = [], []

    def visit_FunctionDef(self, node):
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        verdicts = list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "verdict"]
        constant = any(
            isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "Verdict"
            for v in verdicts
        )
        if name == "Finding" and constant and not any(f.startswith("judge_") for f in self.stack):
            self.found.append(f"{'.'.join(self.stack) or '<module>'}:{node.lineno}")
        self.generic_visit(node)


def test_no_verdict_is_written_down_outside_a_judge():
    found = []
    for path in sorted((ROOT / "cases").rglob("*.py")):
        visitor = _WrittenVerdicts()
        visitor.visit(ast.parse(path.read_text()))
        found += [f"{path.relative_to(ROOT)}::{where}" for where in visitor.found]
    assert not found, f"Finding(Verdict.<constant>) outside a judge_* function: {found}"


def test_the_guards_see_a_check_without_a_judge():
    """The guards themselves go red: a check that asserts and returns HOLDS is caught by both."""

    def check_constant(device):
        assert device is not None
        return Finding(Verdict.HOLDS, "asserted above")  # noqa: F821 (parsed, never run)

    assert not _calls_a_judge(check_constant)
    visitor = _WrittenVerdicts()
    visitor.visit(ast.parse(textwrap.dedent(inspect.getsource(check_constant))))
    assert visitor.found == ["check_constant:3"]
