"""`python -m notes`: the child's side writes one note's results as JSON from a folder of its own,
and the counts read the results of every note (the notes themselves are run in
tests/integration/test_snippets.py)."""

from __future__ import annotations

import json
import os

from notes import __main__ as notes_main


def test_the_child_writes_its_results_from_a_folder_of_its_own(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # main leaves the child in its own folder: put back after the test
    ran_in = []

    def child(prefix):
        ran_in.append(os.getcwd())
        return [{"locator": f"{prefix}#0", "class": "code"}]

    monkeypatch.setattr(notes_main, "child", child)
    out = tmp_path / "results.json"
    assert notes_main.main(["--run", "002", "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == [{"locator": "002#0", "class": "code"}]
    assert ran_in and ran_in[0] != str(tmp_path)  # the files a snippet writes land elsewhere


def test_the_counts_read_every_notes_results(monkeypatch):
    result = {
        "locator": "000#0",
        "id": "x.y",
        "class": "code",
        "ran": True,
        "error": None,
        "deprecations": [],
        "static": [],
    }
    monkeypatch.setattr(notes_main, "run_notes", lambda prefixes: {p: (dict(result),) for p in prefixes})
    text = notes_main.summary()
    assert text.startswith("snippets found: 5 in 5 notes")
    assert "code run: 5" in text and "errata: 0 on 0 snippets" in text
