"""The techniques from the notes, one module per catalogue ID (a topic with several IDs is a package).

Cases are found by scanning this package for module-level `Case` objects; importing a module
has no side effects beyond defining them. Every ID whose notes show code gets one more check,
``notes_snippets``: the notes' snippets of that ID compiled and run as written
(`notes.run`), their failures the notes' errata; it names no claim.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from functools import lru_cache

from cases.spec import Case, Check
from notes.classify import judge_snippets
from notes.map import SNIPPETS
from notes.run import results_for

SNIPPETS_CHECK = "notes_snippets"

WHERE = "catalogue ID `a.b` is declared in cases/a.py or cases/a/b.py"


def _case_modules():
    """Every module that may declare cases: not the private rooms (`_lib`, the helpers; `_launch`,
    what starts processes, its workers among it) or the declaration module (`spec`)."""
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts == ["spec"]:
            continue
        yield info.name


@lru_cache(maxsize=None)
def all_cases() -> tuple[Case, ...]:
    found: dict[str, Case] = {}
    for name in _case_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, Case):
                if value.id in found and found[value.id] is not value:
                    raise ValueError(f"two cases declare {value.id!r}")
                found[value.id] = value
                _declared_in[value.id] = name
    return tuple(sorted((_with_snippets(c) for c in found.values()), key=lambda c: c.id))


def snippets_check(case_id: str) -> Check | None:
    """A `Check` running the ID's snippets (its notes once per process); None if it has none."""
    if not any(e.id == case_id for e in SNIPPETS.values()):
        return None

    def check_notes_snippets(device):
        return judge_snippets(case_id, results_for(case_id))

    check_notes_snippets.__name__ = check_notes_snippets.__qualname__ = "check_notes_snippets"
    return Check(check_notes_snippets, devices=("cpu",), claim=None)


def _with_snippets(case: Case) -> Case:
    """The case with its notes' snippets as one more check (the same for every ID, so declared once
    here rather than in each of the 45 declarations)."""
    check = snippets_check(case.id)
    if check is None or SNIPPETS_CHECK in case.checks:
        return case
    return dataclasses.replace(case, checks={**case.checks, SNIPPETS_CHECK: check})


_declared_in: dict[str, str] = {}


def declared_in(case_id: str) -> str:
    """The module that declares `case_id` (the completeness test holds it to `WHERE`)."""
    all_cases()
    return _declared_in[case_id]


def declared_case(case_id: str) -> Case:
    """`case_id` as its module declares it (its variants; not the snippets check `get_case` adds),
    importing that module alone: for a process that needs one case, where importing all of them
    costs ~0.2 s (harness.measure.faulted_pages's children)."""
    for name in expected_modules(case_id):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for value in vars(module).values():
            if isinstance(value, Case) and value.id == case_id:
                return value
    raise KeyError(f"no case {case_id!r} ({WHERE})")


def expected_modules(case_id: str) -> tuple[str, str]:
    topic, name = case_id.split(".", 1)
    return f"{__name__}.{topic}", f"{__name__}.{topic}.{name}"


def get_case(case_id: str) -> Case:
    for case in all_cases():
        if case.id == case_id:
            return case
    raise KeyError(f"no case {case_id!r}")
