"""notes.text: a note file found by its prefix, a quote held to the notes' words (whitespace and
Markdown escapes as a reader sees them, nothing else loosened), and its line found."""

from __future__ import annotations

import pytest

from notes import text


def test_each_prefix_names_one_note_file_and_an_unknown_one_is_refused():
    assert [text.note_path(p).name[:3] for p in text.PREFIXES] == list(text.PREFIXES)
    with pytest.raises(ValueError, match="no single note file"):
        text.note_path("999")


def test_a_quote_is_the_notes_words_or_it_is_named():
    path = text.note_path("004")
    line = next(raw.strip() for raw in path.read_text(encoding="utf-8").splitlines() if len(raw.strip()) > 30)
    assert text.not_verbatim(line, "004") == []
    # One changed character is not the notes' words.
    changed = line[:-1] + ("x" if line[-1] != "x" else "y")
    assert text.not_verbatim(changed, "004") == [changed]


def test_a_quote_is_located_on_its_line():
    path = text.note_path("002")
    lines = path.read_text(encoding="utf-8").splitlines()
    n, line = next((i, raw.strip()) for i, raw in enumerate(lines, 1) if len(raw.strip()) > 30)
    assert text.locate(line, "002") == ("002", n)
