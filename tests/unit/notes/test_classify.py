"""notes.classify: every Python code snippet compiled in the unit tier, each failure classified as
the erratum it is, and the judge of an ID's snippets.
Running the notes is in tests/integration/test_snippets.py."""

from __future__ import annotations

import pytest

import cases
from harness.contract.record import LEGACY_KINDS, ErratumKind, Finding
from notes import classify, deprecation, parse, run
from notes.map import NOT_COMPILED, SNIPPETS

SNIPPETS_FOUND = parse.all_snippets()
PYTHON = [s for s in SNIPPETS_FOUND if s.is_python]


def _snippet(source, tag="python", locator_index=0):
    return parse.Snippet("009_x.txt", locator_index, 10, tag, parse.language_of(tag, source), source)


# ---- compiling: every Python code snippet, in the unit tier -------------------------------------


CODE = [s for s in PYTHON if parse.snippet_class(s) == "code"]


@pytest.mark.parametrize("snippet", CODE, ids=[s.locator for s in CODE])
def test_every_code_snippet_is_compiled(snippet):
    """Each code snippet compiles, or its failure is a typo erratum on its line with the error
    as evidence (and the map says it does not compile); never repaired."""
    error = classify.compile_snippet(snippet)
    entry = SNIPPETS[snippet.locator]
    if error is None:
        assert entry.reason != NOT_COMPILED, f"{snippet.locator} compiles now: its map entry is stale"
        return
    assert not entry.runs and entry.reason == NOT_COMPILED, f"{snippet.locator} does not compile: {error}"
    result = _result(snippet.locator, compile_error=error, file=snippet.file, line=snippet.line)
    finding = classify.judge_snippets(entry.id, [result])
    (erratum,) = finding.errata
    assert erratum.kind is ErratumKind.TYPO
    assert error["message"] in erratum.evidence and erratum.quote
    assert erratum.file == snippet.prefix and erratum.line == snippet.line + error["line"]


def test_compile_counts():
    failures = [s.locator for s in CODE if classify.compile_snippet(s)]
    # 77 blocks of code, less 003#20, an interactive session (its last line the echoed output).
    assert len(CODE) == 76 and len(failures) == 9, failures


# ---- classification: one test per kind ----------------------------------------------------------


def test_classify_typo():
    assert classify.classify({"type": "SyntaxError"}) is ErratumKind.TYPO
    assert classify.classify({"type": "IndentationError"}) is ErratumKind.TYPO
    assert (
        classify.classify({"type": "NameError", "name": "tirch", "slip": "did you mean 'torch'?"})
        is ErratumKind.TYPO
    )
    assert (
        classify.classify({"type": "AttributeError", "close_match": "apply", "torch_name": True})
        is ErratumKind.TYPO
    )


def test_classify_removed_api():
    assert classify.classify({"type": "AttributeError", "torch_name": True}) is ErratumKind.REMOVED_API
    assert classify.classify({"type": "ImportError", "torch_name": True}) is ErratumKind.REMOVED_API
    assert classify.classify({"type": "ModuleNotFoundError", "torch_name": True}) is ErratumKind.REMOVED_API
    assert classify.classify({"type": "NameError", "removed_from": "torch._six"}) is ErratumKind.REMOVED_API


def test_classify_deprecated_api():
    assert classify.classify({"type": "Deprecation"}) is ErratumKind.DEPRECATED_API


def test_classify_raises_and_never_a_legacy_kind():
    assert classify.classify({"type": "RuntimeError"}) is ErratumKind.RAISES
    assert classify.classify({"type": "TypeError"}) is ErratumKind.RAISES
    # A name the notes never define, not plainly a slip: the crash as written.
    assert classify.classify({"type": "NameError", "name": "rnn", "slip": ""}) is ErratumKind.RAISES
    # `'Net' object has no attribute 'fc2'`: not a torch name, the notes' code raises.
    assert classify.classify({"type": "AttributeError", "torch_name": False}) is ErratumKind.RAISES
    for kind in ("OutputMismatch", "ValueError", "SystemExit", "KeyError"):
        assert classify.classify({"type": kind}) not in LEGACY_KINDS


@pytest.mark.parametrize(
    "category, message, deprecated",
    [
        (DeprecationWarning, "`torch.jit.script` is deprecated", True),  # torch 2.13
        (FutureWarning, "`torch.jit.script` is deprecated", True),  # torch 2.14
        (PendingDeprecationWarning, "x will go", True),
        (FutureWarning, "The default of x will change", True),
        (UserWarning, "torch.range is deprecated and will be removed", True),
        (UserWarning, "Using a target size that is different to the input size", False),
        (RuntimeWarning, "overflow encountered", False),
    ],
)
def test_deprecations_by_meaning(category, message, deprecated):
    assert deprecation.is_deprecation(category, message) is deprecated


# ---- the judge ----------------------------------------------------------------------------------


def _result(locator, **kw):
    base = {
        "locator": locator,
        "file": "000_x.txt",
        "line": 7,
        "language": "python",
        "class": "code",
        "first_line": "a = f(1)",
        "first_lineno": 1,
        "ran": False,
    }
    base.update({"not_run": "" if kw.get("ran") else "needs `x`", **kw})
    return base


def test_judge_passing_snippets_give_no_errata():
    finding = classify.judge_snippets(
        "x.y", [_result("000#1", ran=True, error=None, deprecations=[], static=[])]
    )
    assert isinstance(finding, Finding) and finding.verdict is None and finding.errata == ()
    assert "1 snippets (code 1): 1 code compiled, 1 ran, 0 errata" in finding.evidence


def test_judge_a_raising_snippet_is_an_erratum_on_its_line():
    error = {
        "type": "RuntimeError",
        "message": "a leaf Variable ...",
        "line": 3,
        "quote": "m.weight.fill_(1.0)",
    }
    warn = {"type": "Deprecation", "message": "x is deprecated (FutureWarning)", "line": 5, "quote": "q()"}
    results = [
        _result("000#1", ran=True, error=None, deprecations=[], static=[]),
        _result("000#2", ran=True, error=error, deprecations=[warn], static=[]),
    ]
    finding = classify.judge_snippets("x.y", results)
    assert [(e.kind, e.quote, e.file, e.line) for e in finding.errata] == [
        (ErratumKind.RAISES, "m.weight.fill_(1.0)", "000", 10),
        (ErratumKind.DEPRECATED_API, "q()", "000", 12),
    ]
    assert "a leaf Variable" in finding.errata[0].evidence


def test_two_failures_of_one_line_are_one_erratum():
    """One fault, one erratum: the crash, a static slip and a deprecation on one line are one
    erratum (the first decides), the others named in its evidence."""
    line = 4
    error = {
        "type": "NameError",
        "message": "name 'json' is not defined",
        "line": line,
        "quote": "d = json.load(fo)",
    }
    static = {
        "type": "NameError",
        "message": "name 'fo' ...",
        "line": line,
        "quote": "d = json.load(fo)",
        "static": True,
    }
    warn = {
        "type": "Deprecation",
        "message": "old (DeprecationWarning)",
        "line": line,
        "quote": "d = json.load(fo)",
    }
    result = _result("000#3", ran=True, error=error, static=[static], deprecations=[warn])
    finding = classify.judge_snippets("x.y", [result])
    (erratum,) = finding.errata
    assert erratum.line == 7 + line and "name 'fo'" in erratum.evidence and "old" in erratum.evidence
    keys = [e.key for e in finding.errata]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize(
    "locator, cls",
    [
        ("004#6", "transcript"),
        ("004#30", "transcript"),
        ("001#15", "source"),
        ("001#20", "source"),
        ("004#31", "signature"),
        ("004#16", "pseudo"),
    ],
)
def test_a_non_code_snippet_is_never_the_notes_code_being_wrong(locator, cls):
    """A `>>>` transcript, an excerpt of torch's source, a listed signature, pseudo-code: shown as
    what it is. Fed the failures running it as code would give, the judge files no erratum, and
    the child never compiles nor runs it as code."""
    snippet = next(s for s in SNIPPETS_FOUND if s.locator == locator)
    assert parse.snippet_class(snippet) == cls
    assert cls == "transcript" or not SNIPPETS[locator].runs  # a transcript is replayed, as context
    crash = {
        "type": "NameError",
        "message": "name 'inf' is not defined",
        "line": 1,
        "quote": snippet.first_line,
    }
    result = _result(locator, ran=True, error=crash, static=[crash], compile_error=crash, **{"class": cls})
    finding = classify.judge_snippets(SNIPPETS[locator].id, [result])
    assert finding.errata == () and f"{locator} {cls}" in finding.evidence


def test_a_snippet_runs_whole_so_its_crash_as_written_shows():
    """Run top to bottom as pasted, not line by line on fresh inputs: `label` used in its own
    definition crashes as written; split into lines with `label` supplied, it would not."""
    snippet = _snippet("label = torch.tensor([0, 1]).view(len(label), -1)\nsrc = torch.ones_like(label)\n")
    namespace = {"__builtins__": __builtins__}
    exec("\n".join(parse.SEED_IMPORTS), namespace)
    error, _, _ = run._run(snippet, namespace)
    assert error is not None and error["type"] == "NameError" and error["line"] == 1
    finding = classify.judge_snippets(
        "x.y", [_result("009#0", ran=True, error=error, static=[], deprecations=[])]
    )
    (erratum,) = finding.errata
    assert erratum.kind is ErratumKind.RAISES and erratum.line == 7 + 1


def test_lines_judged_elsewhere_are_no_second_erratum():
    error = {
        "type": "RuntimeError",
        "message": "leaf",
        "line": 2,
        "quote": "m.w.fill_(1)",
        "elsewhere": "claim c",
    }
    finding = classify.judge_snippets(
        "x.y", [_result("000#4", ran=True, error=error, static=[], deprecations=[])]
    )
    assert finding.errata == () and "judged elsewhere: 000#4 L9 (claim c)" in finding.evidence


def test_snippets_check_exists_only_for_ids_with_snippets():
    check = cases.snippets_check("clip.grad_norm")
    assert check is not None and check.devices == ("cpu",) and check.claim is None
    assert cases.snippets_check("nn.kd_vs_brute") is None
