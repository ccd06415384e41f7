"""notes.map: every snippet mapped to a catalogue ID and claim, no entry stale, which snippets run
said, and every need said where the notes define it."""

from __future__ import annotations

import importlib
import re

from cases import expected_modules
from harness.contract import catalogue
from notes import parse
from notes.map import CONTEXT, NOT_PYTHON, SHOWN, SNIPPETS, guard_matches

SNIPPETS_FOUND = parse.all_snippets()
CATALOG_IDS = set(
    re.findall(r"^\| `([a-z_]+\.[a-z_0-9]+)` \|", catalogue.CATALOG_PATH.read_text(encoding="utf-8"), re.M)
)


def _declared_case(case_id):
    """The case from the module that declares it (cases/a.py or cases/a/b.py), nothing else imported."""
    for name in reversed(expected_modules(case_id)):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for value in vars(module).values():
            if getattr(value, "id", None) == case_id and hasattr(value, "claims"):
                return value
    raise AssertionError(f"no module declares {case_id}")


def test_every_snippet_is_mapped_and_no_entry_is_stale():
    found = {s.locator: s for s in SNIPPETS_FOUND}
    assert sorted(set(found) - set(SNIPPETS)) == [], "snippets without a map entry"
    assert sorted(set(SNIPPETS) - set(found)) == [], "map entries naming no snippet"
    moved = {
        loc: (e.first, found[loc].first_line)
        for loc, e in SNIPPETS.items()
        if not guard_matches(e, found[loc].first_line)
    }
    assert moved == {}, "map entries whose first line no longer matches the snippet (an edited note)"


def test_map_names_catalogue_ids_and_their_declared_claims():
    for loc, entry in SNIPPETS.items():
        assert entry.id == CONTEXT or entry.id in CATALOG_IDS, f"{loc}: {entry.id!r} is not a catalogue ID"
    for case_id in sorted({e.id for e in SNIPPETS.values() if e.claim}):
        case = _declared_case(case_id)
        declared = {c.id for c in case.claims}
        for loc, entry in SNIPPETS.items():
            if entry.id == case_id and entry.claim:
                assert entry.claim in declared, f"{loc}: claim {entry.claim!r} not declared by {case_id}"


def test_the_map_says_which_snippets_run():
    for s in SNIPPETS_FOUND:
        entry = SNIPPETS[s.locator]
        cls = parse.snippet_class(s)
        assert cls in parse.CLASSES, s.locator
        if not s.is_python and cls in ("shell", "text"):
            assert not entry.runs and entry.reason in (NOT_PYTHON, SHOWN), s.locator
        if entry.runs:
            assert cls in ("code", "transcript") and not entry.reason, s.locator
        if cls not in ("code", "transcript"):
            assert not entry.runs, f"{s.locator} is {cls}: never run as the notes' code"


def test_every_need_says_where_the_notes_define_it():
    """A need names the note line that defines or declares it, before the snippet in its own
    note; a name the notes never define is no need (the snippet fails as written)."""
    found = {s.locator: s for s in SNIPPETS_FOUND}
    for loc, entry in SNIPPETS.items():
        for name, where in entry.needs:
            prefix, line = where.split(":")
            snippet = found[loc]
            assert prefix == snippet.prefix, f"{loc}: {name} is defined in another note ({where})"
            text = parse.note_file(prefix).read_text(encoding="utf-8").splitlines()
            assert int(line) <= snippet.line + len(snippet.source.splitlines()), f"{loc}: {where} is after it"
            assert name in text[int(line) - 1], f"{loc}: {where} does not name {name!r}"
