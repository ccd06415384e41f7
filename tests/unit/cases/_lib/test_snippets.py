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
from cases._lib.snippet_map import CONTEXT, NOT_COMPILED, NOT_PYTHON, SHOWN, SNIPPETS, guard_matches
from harness.contract.record import LEGACY_KINDS, ErratumKind, Finding

SNIPPETS_FOUND = sn.all_snippets()
PYTHON = [s for s in SNIPPETS_FOUND if s.is_python]
CATALOG = Path(sn.__file__).resolve().parents[1] / "CATALOG.md"
CATALOG_IDS = set(re.findall(r"^\| `([a-z_]+\.[a-z_0-9]+)` \|", CATALOG.read_text(encoding="utf-8"), re.M))


# ---- extraction and the map ---------------------------------------------------------------------


def test_the_notes_are_the_shared_notes_copy():
    names = [p.name for p in sn.note_files()]
    assert [n[:3] for n in names] == ["000", "001", "002", "003", "004"], names
    shared = Path(sn.REPO_ROOT).parent / "shared" / "notes"
    if shared.is_dir():  # a workspace with the notes beside the repository: the copy is verbatim
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


def _snippet(source, tag="python", locator_index=0):
    return sn.Snippet("009_x.txt", locator_index, 10, tag, sn.language_of(tag, source), source)


def test_classes_from_the_text():
    assert (
        sn.class_of_text(_snippet("nansum()\n\n>>> x = np.arange(10.)\n>>> x.sum()\nnan\n")) == "transcript"
    )
    assert sn.class_of_text(_snippet("    def reset(self):\n        pass\n")) == "source"
    assert (
        sn.class_of_text(_snippet('def f(p):\n    """x.\n\n    Arguments:\n        p: y\n    """\n'))
        == "source"
    )
    sig = (
        "DataLoader(dataset, batch_size=1, ..., *, prefetch_factor=2,\n           persistent_workers=False)\n"
    )
    assert sn.class_of_text(_snippet(sig)) == "signature"
    assert sn.class_of_text(_snippet("pack(header, s) -> s\nunpack(s) -> header, s\n")) == "signature"
    assert sn.class_of_text(_snippet("F.grid_sample(input, grid, mode='bilinear')\n", "plain")) == "signature"
    assert sn.class_of_text(_snippet("a[0::2] //\npe[:,0::2]//从0\n")) == "pseudo"
    assert sn.class_of_text(_snippet('{"a": [1, 2],..,}\n')) == "text"
    # Code: a call of bare names is a call, not a signature; one `//` slip among code is code's typo.
    assert sn.class_of_text(_snippet("model.apply(init_weight)\n")) == "code"
    assert sn.class_of_text(_snippet("class A(nn.Module)://Seq\n  pass\nx = 1\n")) == "code"


def test_the_map_says_which_snippets_run():
    for s in SNIPPETS_FOUND:
        entry = SNIPPETS[s.locator]
        cls = sn.snippet_class(s)
        assert cls in sn.CLASSES, s.locator
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
            text = sn.note_file(prefix).read_text(encoding="utf-8").splitlines()
            assert int(line) <= snippet.line + len(snippet.source.splitlines()), f"{loc}: {where} is after it"
            assert name in text[int(line) - 1], f"{loc}: {where} does not name {name!r}"


# ---- compiling: every Python code snippet, in the unit tier -------------------------------------


CODE = [s for s in PYTHON if sn.snippet_class(s) == "code"]


@pytest.mark.parametrize("snippet", CODE, ids=[s.locator for s in CODE])
def test_every_code_snippet_is_compiled(snippet):
    """Each code snippet compiles, or its failure is a typo erratum on its line with the error
    as evidence (and the map says it does not compile); never repaired."""
    error = sn.compile_snippet(snippet)
    entry = SNIPPETS[snippet.locator]
    if error is None:
        assert entry.reason != NOT_COMPILED, f"{snippet.locator} compiles now: its map entry is stale"
        return
    assert not entry.runs and entry.reason == NOT_COMPILED, f"{snippet.locator} does not compile: {error}"
    result = _result(snippet.locator, compile_error=error, file=snippet.file, line=snippet.line)
    finding = sn.judge_snippets(entry.id, [result])
    (erratum,) = finding.errata
    assert erratum.kind is ErratumKind.TYPO
    assert error["message"] in erratum.evidence and erratum.quote
    assert erratum.file == snippet.prefix and erratum.line == snippet.line + error["line"]


def test_compile_counts():
    failures = [s.locator for s in CODE if sn.compile_snippet(s)]
    # 77 blocks of code, less 003#20, an interactive session (its last line the echoed output).
    assert len(CODE) == 76 and len(failures) == 9, failures


# ---- classification: one test per kind ----------------------------------------------------------


def test_classify_typo():
    assert sn.classify({"type": "SyntaxError"}) is ErratumKind.TYPO
    assert sn.classify({"type": "IndentationError"}) is ErratumKind.TYPO
    assert (
        sn.classify({"type": "NameError", "name": "tirch", "slip": "did you mean 'torch'?"})
        is ErratumKind.TYPO
    )
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
    assert sn.classify({"type": "Deprecation"}) is ErratumKind.DEPRECATED_API


def test_classify_raises_and_never_a_legacy_kind():
    assert sn.classify({"type": "RuntimeError"}) is ErratumKind.RAISES
    assert sn.classify({"type": "TypeError"}) is ErratumKind.RAISES
    # A name the notes never define, not plainly a slip: the crash as written.
    assert sn.classify({"type": "NameError", "name": "rnn", "slip": ""}) is ErratumKind.RAISES
    # `'Net' object has no attribute 'fc2'`: not a torch name, the notes' code raises.
    assert sn.classify({"type": "AttributeError", "torch_name": False}) is ErratumKind.RAISES
    for kind in ("OutputMismatch", "ValueError", "SystemExit", "KeyError"):
        assert sn.classify({"type": kind}) not in LEGACY_KINDS


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
    assert sn.is_deprecation(category, message) is deprecated


def test_a_deprecation_is_filed_on_the_line_that_called_it():
    import warnings

    source = "def old():\n    warnings.warn('old() is deprecated', FutureWarning)\nx = 1\nold()\n"
    snippet = _snippet(source)
    error, deprecations, _ = sn._run(snippet, {"warnings": warnings})
    assert error is None and [d["line"] for d in deprecations] == [2]
    # torch's own warning, raised inside torch: the line of the snippet that called torch.
    snippet = _snippet("import torch\nx = torch.ones(1)\ny = torch.range(0, 3)\n")
    _, deprecations, _ = sn._run(snippet, {})
    assert [d["line"] for d in deprecations] == [3]


def test_static_reading_finds_slips_and_gone_torch_names():
    snippet = _snippet("y = torch.ones(2)\ndist.all_reduce_multigpu([y])\nz = wold_siz + 1\n")
    found, unresolved = sn.static_failures(snippet, {"wold_size"}, (), ran=False)
    found = {f["name"]: f for f in found}
    assert sn.classify(found["all_reduce_multigpu"]) is ErratumKind.REMOVED_API
    assert sn.classify(found["wold_siz"]) is ErratumKind.TYPO
    # A name the notes never define, in code not run: listed, no erratum (no crash was seen).
    ok = _snippet("z = torch.zeros(2) + model(x)\n")
    assert sn.static_failures(ok, set(), ("model",), ran=False) == ([], ["x"])


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
    finding = sn.judge_snippets("x.y", [_result("000#1", ran=True, error=None, deprecations=[], static=[])])
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
    finding = sn.judge_snippets("x.y", results)
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
    finding = sn.judge_snippets("x.y", [result])
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
    assert sn.snippet_class(snippet) == cls
    assert cls == "transcript" or not SNIPPETS[locator].runs  # a transcript is replayed, as context
    crash = {
        "type": "NameError",
        "message": "name 'inf' is not defined",
        "line": 1,
        "quote": snippet.first_line,
    }
    result = _result(locator, ran=True, error=crash, static=[crash], compile_error=crash, **{"class": cls})
    finding = sn.judge_snippets(SNIPPETS[locator].id, [result])
    assert finding.errata == () and f"{locator} {cls}" in finding.evidence


def test_a_snippet_runs_whole_so_its_crash_as_written_shows():
    """Run top to bottom as pasted, not line by line on fresh inputs: `label` used in its own
    definition crashes as written; split into lines with `label` supplied, it would not."""
    snippet = _snippet("label = torch.tensor([0, 1]).view(len(label), -1)\nsrc = torch.ones_like(label)\n")
    namespace = {"__builtins__": __builtins__}
    exec("\n".join(sn.SEED_IMPORTS), namespace)
    error, _, _ = sn._run(snippet, namespace)
    assert error is not None and error["type"] == "NameError" and error["line"] == 1
    finding = sn.judge_snippets("x.y", [_result("009#0", ran=True, error=error, static=[], deprecations=[])])
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
    finding = sn.judge_snippets("x.y", [_result("000#4", ran=True, error=error, static=[], deprecations=[])])
    assert finding.errata == () and "judged elsewhere: 000#4 L9 (claim c)" in finding.evidence


def test_snippets_check_exists_only_for_ids_with_snippets():
    check = sn.snippets_check("clip.grad_norm")
    assert check is not None and check.devices == ("cpu",) and check.claim is None
    assert sn.snippets_check("nn.kd_vs_brute") is None
