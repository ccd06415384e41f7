"""The notes' snippets as written (cases/_lib/snippets.py, snippet_map.py; CATALOG.md: "The notes' snippets
run as written"): extraction, the map (every snippet mapped, no entry stale), compiling every Python
snippet, the classification of each error type and the judge. Running the notes is in
tests/integration/test_snippets.py."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from cases import expected_modules
from cases._lib import snippets as sn
from cases._lib.snippet_map import CONTEXT, NOT_COMPILED, NOT_PYTHON, SNIPPETS, guard_matches
from harness.contract.record import ErratumKind, Finding

SNIPPETS_FOUND = sn.all_snippets()
PYTHON = [s for s in SNIPPETS_FOUND if s.is_python]
CATALOG = Path(sn.__file__).resolve().parents[1] / "CATALOG.md"
CATALOG_IDS = set(re.findall(r"^\| `([a-z_]+\.[a-z_0-9]+)` \|", CATALOG.read_text(encoding="utf-8"), re.M))


# ---- extraction and the map ---------------------------------------------------------------------


def test_the_notes_are_the_shared_notes_copy():
    names = [p.name for p in sn.note_files()]
    assert [n[:3] for n in names] == ["000", "001", "002", "003", "004"], names
    shared = Path(sn.REPO_ROOT).parent / "shared" / "notes"
    if shared.is_dir():  # a workspace with ../shared: the copy is verbatim
        for path in sn.note_files():
            assert path.read_bytes() == (shared / path.name).read_bytes(), (
                f"{path.name} differs from {shared}"
            )


def test_every_fenced_block_is_extracted():
    for path in sn.note_files():
        fences = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if sn._FENCE.match(line))
        assert fences == 2 * len(sn.extract(path)), f"{path.name}: {fences} fences, unbalanced extraction"
    assert len(SNIPPETS_FOUND) == 116


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


def test_map_names_catalogue_ids_and_their_declared_claims():
    for loc, entry in SNIPPETS.items():
        assert entry.id == CONTEXT or entry.id in CATALOG_IDS, f"{loc}: {entry.id!r} is not a catalogue ID"
    for case_id in sorted({e.id for e in SNIPPETS.values() if e.claim}):
        case = _declared_case(case_id)
        declared = {c.id for c in case.claims}
        for loc, entry in SNIPPETS.items():
            if entry.id == case_id and entry.claim:
                assert entry.claim in declared, f"{loc}: claim {entry.claim!r} not declared by {case_id}"


def test_languages():
    assert sn.language_of("", "data.idx\ndata.rec\n") == "other"  # a file listing parses, but is not code
    assert sn.language_of("", "x = torch.tensor([1, 2, 3])\n") == "python"
    assert sn.language_of("", ">>> a = 1\n") == "pycon"
    assert sn.language_of("bash", "ls\n") == "shell"
    assert sn.language_of("plain", "[\n") == "other"
    assert sn.language_of("py", "oops(\n") == "python"  # tagged python: compiled, and fails


def test_the_map_says_which_snippets_run():
    for s in SNIPPETS_FOUND:
        entry = SNIPPETS[s.locator]
        if not s.is_python:
            assert not entry.runs and entry.reason == NOT_PYTHON, s.locator
        if entry.runs:
            assert s.is_python and not entry.reason, s.locator


# ---- compiling: every Python snippet, in the unit tier ------------------------------------------


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.locator for s in PYTHON])
def test_every_python_snippet_is_compiled(snippet):
    """Each Python snippet compiles, or its failure is a typo erratum with the error as evidence
    (and the map says it does not compile); never repaired."""
    error = sn.compile_snippet(snippet)
    entry = SNIPPETS[snippet.locator]
    if error is None:
        assert entry.reason != NOT_COMPILED, f"{snippet.locator} compiles now: its map entry is stale"
        return
    assert not entry.runs and entry.reason == NOT_COMPILED, f"{snippet.locator} does not compile: {error}"
    result = _result(snippet.locator, compile_error=error)
    finding = sn.judge_snippets(entry.id, [result])
    (erratum,) = finding.errata
    assert erratum.kind is ErratumKind.TYPO
    assert error["message"] in erratum.evidence and erratum.quote


def test_compile_counts():
    failures = [s.locator for s in PYTHON if sn.compile_snippet(s)]
    assert len(PYTHON) == 99 and len(failures) == 18, failures


# ---- classification: one test per kind ----------------------------------------------------------


def test_classify_typo():
    assert sn.classify({"type": "SyntaxError"}) is ErratumKind.TYPO
    assert sn.classify({"type": "IndentationError"}) is ErratumKind.TYPO
    assert sn.classify({"type": "NameError", "name": "tirch"}) is ErratumKind.TYPO
    assert (
        sn.classify({"type": "AttributeError", "close_match": "apply", "torch_name": True})
        is ErratumKind.TYPO
    )


def test_classify_removed_api():
    assert sn.classify({"type": "AttributeError", "torch_name": True}) is ErratumKind.REMOVED_API
    assert sn.classify({"type": "ImportError", "torch_name": True}) is ErratumKind.REMOVED_API
    assert sn.classify({"type": "ModuleNotFoundError", "torch_name": True}) is ErratumKind.REMOVED_API
    assert sn.classify({"type": "NameError", "removed_from": "torch._six"}) is ErratumKind.REMOVED_API


def test_classify_deprecated_api():
    assert sn.classify({"type": "DeprecationWarning"}) is ErratumKind.DEPRECATED_API


def test_classify_wrong_statement():
    assert sn.classify({"type": "RuntimeError"}) is ErratumKind.WRONG_STATEMENT
    assert sn.classify({"type": "TypeError"}) is ErratumKind.WRONG_STATEMENT
    assert sn.classify({"type": "OutputMismatch"}) is ErratumKind.WRONG_STATEMENT
    # `'tuple' object has no attribute 'data'`: not a torch name, the notes' code is wrong.
    assert sn.classify({"type": "AttributeError", "torch_name": False}) is ErratumKind.WRONG_STATEMENT


def test_static_reading_finds_slips_and_gone_torch_names():
    snippet = sn.Snippet(
        "009_x.txt", 0, 1, "python", "python", "y = tirch.ones(2)\ndist.all_reduce_multigpu([y])\n"
    )
    found = {f["name"]: f for f in sn.static_failures(snippet, set(), (), ran=False)}
    assert sn.classify(found["tirch"]) is ErratumKind.TYPO and found["tirch"]["close_match"] == "torch"
    assert sn.classify(found["all_reduce_multigpu"]) is ErratumKind.REMOVED_API
    ok = sn.Snippet("009_x.txt", 1, 1, "python", "python", "z = torch.zeros(2) + model(x)\n")
    assert sn.static_failures(ok, set(), ("model", "x"), ran=False) == []


# ---- the judge ----------------------------------------------------------------------------------


def _result(locator, **kw):
    base = {"locator": locator, "line": 7, "language": "python", "first_line": "a = f(1)", "ran": False}
    base.update({"not_run": "" if kw.get("ran") else "needs `x`", **kw})
    return base


def test_judge_passing_snippets_give_no_errata():
    finding = sn.judge_snippets("x.y", [_result("000#1", ran=True, error=None, deprecations=[], static=[])])
    assert isinstance(finding, Finding) and finding.verdict is None and finding.errata == ()
    assert "1 snippets: 1 compiled, 1 ran, 0 failing" in finding.evidence


def test_judge_a_raising_snippet_is_an_erratum():
    error = {
        "type": "RuntimeError",
        "message": "a leaf Variable ...",
        "line": 3,
        "quote": "m.weight.fill_(1.0)",
    }
    warn = {
        "type": "DeprecationWarning",
        "message": "FutureWarning: x is deprecated",
        "line": None,
        "quote": "q",
    }
    results = [
        _result("000#1", ran=True, error=None, deprecations=[], static=[]),
        _result("000#2", ran=True, error=error, deprecations=[warn], static=[]),
    ]
    finding = sn.judge_snippets("x.y", results)
    (erratum,) = finding.errata
    assert erratum.kind is ErratumKind.WRONG_STATEMENT and erratum.quote == "m.weight.fill_(1.0)"
    assert "a leaf Variable" in erratum.evidence and "deprecated" in erratum.evidence
    assert "2 snippets: 2 compiled, 2 ran, 1 failing" in finding.evidence


def test_judge_deprecation_alone_is_a_deprecated_api_erratum():
    warn = {
        "type": "DeprecationWarning",
        "message": "`torch.jit.script` is deprecated",
        "line": 2,
        "quote": "s",
    }
    finding = sn.judge_snippets(
        "x.y", [_result("000#1", ran=True, error=None, deprecations=[warn], static=[])]
    )
    assert [e.kind for e in finding.errata] == [ErratumKind.DEPRECATED_API]


def test_snippets_check_exists_only_for_ids_with_snippets():
    check = sn.snippets_check("clip.grad_norm")
    assert check is not None and check.devices == ("cpu",) and check.claim is None
    assert sn.snippets_check("nn.kd_vs_brute") is None
