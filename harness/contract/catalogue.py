"""The technique catalogue (CATALOG.md): every ID the suite must cover, with its tier.

The project keeps a copy beside this module so the suite and the reports work on machines that
only have the repository (a GPU box); a test keeps the copy equal to the catalogue it was copied
from, where a workspace holds that beside the repository.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

CATALOG_PATH = Path(__file__).resolve().parents[2] / "cases" / "CATALOG.md"

_TIER = re.compile(r"^##\s+Tier\s+(\d)")
# A row may end without its closing pipe (rows that carry an extra "also:" column do).
_ROW = re.compile(r"^\|\s*`(?P<id>[a-z0-9_]+\.[a-z0-9_]+)`\s*\|(?P<rest>.*?)\|?\s*;?\s*$")


@dataclass(frozen=True)
class Entry:
    id: str
    tier: int
    technique: str
    source: str
    check: str
    measure: str  # empty for Tier 3
    also: str = ""  # claims the catalogue added beside the check (Tier 3's extra column)


def _split_cells(text: str) -> list[str]:
    """Split a table row on ``|`` outside backtick spans (the catalogue writes `|x|²` in code)."""
    cells, current, in_code = [], [], False
    for char in text:
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    cells.append("".join(current).strip())
    return cells


def parse(text: str) -> list[Entry]:
    entries, tier = [], None
    for line in text.splitlines():
        heading = _TIER.match(line)
        if heading:
            tier = int(heading.group(1))
            continue
        if line.startswith("## "):
            tier = None  # e.g. "Out of scope"
            continue
        row = _ROW.match(line)
        if row and tier is not None:
            cells = _split_cells(row.group("rest"))
            cells += [""] * (5 - len(cells))
            if tier == 3:  # technique | source | check | also
                entries.append(Entry(row.group("id"), tier, cells[0], cells[1], cells[2], "", cells[3]))
            else:
                entries.append(Entry(row.group("id"), tier, cells[0], cells[1], cells[2], cells[3]))
    return entries


def load(path: Path = CATALOG_PATH) -> list[Entry]:
    return list(_parsed(path.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> tuple[Entry, ...]:
    """`parse`, once per text: every report, plan and upgrade reads the catalogue (5 ms a parse),
    and one process of the tests reads it hundreds of times. The entries are frozen."""
    return tuple(parse(text))
