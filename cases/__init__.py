"""The techniques from the notes, one module per topic, one `Case` per catalogue ID.

Cases are found by scanning this package for module-level `Case` objects; importing a module
has no side effects beyond defining them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from cases.spec import Case


@lru_cache(maxsize=None)
def all_cases() -> tuple[Case, ...]:
    found: dict[str, Case] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name in {"spec", "catalogue"}:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Case):
                if value.id in found and found[value.id] is not value:
                    raise ValueError(f"two cases declare {value.id!r}")
                found[value.id] = value
    return tuple(sorted(found.values(), key=lambda c: c.id))


def get_case(case_id: str) -> Case:
    for case in all_cases():
        if case.id == case_id:
            return case
    raise KeyError(f"no case {case_id!r}")
