"""What the suite tests' outcomes say beside the timings: the red tests named one line each, why
tests were skipped, and the notes' errata the passed checks found (the second verdict)."""

from __future__ import annotations

import pandas as pd


def skip_reasons(outcomes: pd.DataFrame) -> str:
    if "reason" not in outcomes:
        return ""
    reasons = outcomes.loc[outcomes["outcome"] == "skipped", "reason"].dropna()
    reasons = [r for r in dict.fromkeys(reasons) if r]
    return "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else "")


def red_line(r) -> str:
    """One line naming a failed test and its message."""
    return (
        " ".join(f"{r.name or r.kind} {r.size_label} {r.dtype} {r.device}".split())
        + f" failed: {r.reason[:300]}"
    )


def errata_of(outcomes: pd.DataFrame) -> tuple:
    """The notes' errata the case's passed checks found, each once (by the note file and line it
    is on; by kind and quote in files that did not locate it), in the order found: the second
    verdict, which never decides the first."""
    if "errata" not in outcomes:
        return ()
    found = {}
    for errata in outcomes.loc[outcomes["outcome"] == "passed", "errata"]:
        for erratum in errata or ():
            found.setdefault(erratum.key, erratum)
    return tuple(found.values())
