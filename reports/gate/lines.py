"""The gate's lines and their verdicts: one `Line` per gated pair (or failed check, or case that
vanished), the words a line's verdict is, and the exit status they add up to."""

from __future__ import annotations

import math
from dataclasses import dataclass

UNJUDGED = "could not judge"
EXIT_UNJUDGED = 3
OK, REGRESSED, NEW, VANISHED, INCOMPARABLE, FAILED, MEMORY, SLOWER, UNSTABLE = (
    "ok",
    "regressed",
    "new",
    "vanished",
    "incomparable",
    "check failed",
    "memory saving shrank",
    "slower (absolute)",
    "unstable",
)
FAILING = {REGRESSED, VANISHED, FAILED, MEMORY, SLOWER}


@dataclass
class Line:
    case: str
    size: str
    where: str  # dtype and device
    pair: str
    baseline: float = math.nan
    current: float = math.nan
    change: float = math.nan  # current / baseline - 1
    ci: str = ""
    verdict: str = OK
    note: str = ""


JUDGED = (OK, REGRESSED, MEMORY)  # a line whose pair the test decided, either way


def exit_code(lines: list[Line], allow_unjudged: bool = False) -> int:
    """1 for a regression or a failed check, and nothing else; 3 where a pair could not be judged:
    unstable with no recheck given, or in every recheck, or measured on another machine than the
    baseline (unless the user accepts that); else 0."""
    if any(line.verdict in FAILING for line in lines):
        return 1
    # A baseline from another machine judges nothing here: never a pass (it was one, and the
    # shipped AMX reference "passed" a run without AMX).
    if not allow_unjudged and any(line.verdict in (UNJUDGED, UNSTABLE, INCOMPARABLE) for line in lines):
        return EXIT_UNJUDGED
    return 0
