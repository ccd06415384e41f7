"""The notes' words, found where they are: a quote checked against its note file, an erratum keyed by
the file and line it is on (CATALOG.md: "Quotes are the notes' words"; "One fault is one erratum,
keyed by its note file and line").

A quote is one or more exact fragments of a note file joined by " … " (`FRAGMENT_JOINER`).
A fragment matches the note as a reader sees it: runs of whitespace (a line break inside a
sentence) count as one space, and Markdown's backslash escapes (``\\(``, ``\\_``, ``\\*``) as the
character they escape. Nothing else is loosened: an inserted bracket, a changed word, a dropped
character is not the notes' words.

"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

from harness.contract.claims import Finding

NOTES_DIR = Path(__file__).resolve().parent / "files"
FRAGMENT_JOINER = " … "
PREFIXES = ("000", "001", "002", "003", "004")

# Markdown escapes a backslash before punctuation; the rendered text has the punctuation alone.
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~=])")
_SPACE = re.compile(r"\s+")


def _rendered(text: str) -> str:
    return _SPACE.sub(" ", _ESCAPE.sub(r"\1", text)).strip()


@functools.lru_cache(maxsize=None)
def note_path(prefix: str) -> Path:
    found = sorted(NOTES_DIR.glob(f"{prefix}_*.txt"))
    if len(found) != 1:
        raise ValueError(f"no single note file for {prefix!r} in {NOTES_DIR} (found {len(found)})")
    return found[0]


@functools.lru_cache(maxsize=None)
def _indexed(prefix: str) -> tuple[str, tuple[int, ...]]:
    """The note rendered as one line, and for each of its characters the 1-based source line."""
    out, lines = [], []
    for number, line in enumerate(note_path(prefix).read_text(encoding="utf-8").splitlines(), 1):
        piece = _ESCAPE.sub(r"\1", line)
        out.append(piece + " ")
        lines.extend([number] * (len(piece) + 1))
    text = "".join(out)
    # Collapse whitespace while keeping the map from each kept character to its line.
    kept_chars, kept_lines, space = [], [], False
    for ch, number in zip(text, lines):
        if ch.isspace():
            if not space and kept_chars:
                kept_chars.append(" ")
                kept_lines.append(number)
            space = True
        else:
            kept_chars.append(ch)
            kept_lines.append(number)
            space = False
    return "".join(kept_chars), tuple(kept_lines)


def fragments(quote: str) -> list[str]:
    return [f for f in (_rendered(part) for part in quote.split(FRAGMENT_JOINER)) if f]


def line_of(fragment: str, prefix: str) -> int:
    """The 1-based line of the note where the fragment starts, or 0 where it is not the notes' words."""
    text, lines = _indexed(prefix)
    at = text.find(_rendered(fragment))
    return lines[at] if at >= 0 and fragment.strip() else 0


def not_verbatim(quote: str, prefix: str) -> list[str]:
    """The fragments of a quote that are not in the note file (empty: every one is)."""
    return [f for f in fragments(quote) if not line_of(f, prefix)]


def locate(quote: str, prefix: str = "") -> tuple[str, int]:
    """(file prefix, line) of a quote's first fragment: in the named note, else the first note
    (in file order) that has it; ("", 0) where no note does."""
    first = (fragments(quote) or [""])[0]
    for candidate in (prefix,) if prefix else PREFIXES:
        line = line_of(first, candidate)
        if line:
            return candidate, line
    return prefix, 0


def keyed(finding: Finding | None) -> Finding | None:
    """The finding with each erratum's file and line filled from its quote (where a case did not
    name the line already), so that one fault seen by two checks is one erratum."""
    if finding is None or not finding.errata:
        return finding
    errata = tuple(
        e if e.line else dataclasses.replace(e, **dict(zip(("file", "line"), locate(e.quote, e.file))))
        for e in finding.errata
    )
    return dataclasses.replace(finding, errata=errata)
