"""What a snippet's failure is: compiled (`compile_snippet`), each failure classified as the
notes' erratum it is (`classify`, one per note line: typo, removed API, deprecated API, raises as
written), and an ID's snippets judged (`judge_snippets`)."""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.contract.claims import Finding

from notes.parse import CLASSES, Snippet


def doctest_examples(snippet: Snippet):
    import doctest

    return doctest.DocTestParser().get_examples(snippet.source)


def compile_snippet(snippet: Snippet) -> dict | None:
    """None when it compiles; else its error as a failure record."""
    try:
        if snippet.language == "pycon":
            for example in doctest_examples(snippet):
                compile(example.source, snippet.filename, "single")
        else:
            compile(snippet.source, snippet.filename, "exec")
    except SyntaxError as exc:  # IndentationError and TabError are SyntaxErrors
        return make_failure(
            type(exc).__name__, f"{exc.msg} (line {exc.lineno})", snippet, exc.lineno, text=exc.text
        )
    return None


def make_failure(
    kind: str, message: str, snippet: Snippet, lineno: int | None, text: str | None = None, **kw
):
    lines = snippet.source.splitlines()
    quote = (text or "").strip()
    if not quote and lineno and 1 <= lineno <= len(lines):
        quote = lines[lineno - 1].strip()
    return {"type": kind, "message": message, "line": lineno, "quote": quote or snippet.first_line, **kw}


# ---- classifying ----------------------------------------------------------------------------


def classify(failure: dict):
    """The erratum kind of one failure record (`type` and what the child observed about it)."""
    from harness.contract.claims import ErratumKind

    kind = failure["type"]
    if kind in ("SyntaxError", "IndentationError", "TabError"):
        return ErratumKind.TYPO
    if kind == "NameError":
        if failure.get("removed_from"):
            return ErratumKind.REMOVED_API
        return ErratumKind.TYPO if failure.get("slip") else ErratumKind.RAISES
    if kind in ("AttributeError", "ImportError", "ModuleNotFoundError"):
        if failure.get("close_match"):
            return ErratumKind.TYPO
        if failure.get("torch_name"):
            return ErratumKind.REMOVED_API
        return ErratumKind.RAISES
    if kind == "Deprecation":
        return ErratumKind.DEPRECATED_API
    return ErratumKind.RAISES


def failures_of(result: dict) -> list[dict]:
    """A code snippet's failures, the deciding one first: compile, run, static reading, warnings;
    none for the other classes (shown as what they are) nor for lines judged elsewhere."""
    if result.get("class", "code") != "code":
        return []
    out = []
    if result.get("compile_error"):
        out.append(result["compile_error"])
    if result.get("error"):
        out.append(result["error"])
    out += result.get("static", ())
    out += result.get("deprecations", ())
    return [f for f in out if not f.get("elsewhere")]


def by_line(result: dict) -> list[list[dict]]:
    """The failures grouped by the note line they sit on, in order: one fault, one erratum."""
    groups: dict[int, list[dict]] = {}
    for f in failures_of(result):
        groups.setdefault(notes_line(result, f), []).append(f)
    return [groups[line] for line in sorted(groups)]


def notes_line(result: dict, failure: dict) -> int:
    """The note file's 1-based line of a failure (the fence is the result's line; the snippet's
    lines follow it one for one); the snippet's first line where the failure names none."""
    line = failure.get("line")
    if line:
        return result["line"] + line
    return result["line"] + (result.get("first_lineno") or 1)


def _describe(failure: dict) -> str:
    text = f"{failure['type']}: {failure['message']}"
    if failure.get("static"):
        text += " (read statically, not run)" if not failure.get("ran") else " (read statically)"
    return text


def errata_of(result: dict) -> list:
    """One erratum per note line of a code snippet: its first failure decides kind and quote."""
    from harness.contract.claims import Erratum

    errata = []
    for group in by_line(result):
        first = group[0]
        evidence = f"{result['locator']} (line {result['line']}): {_describe(first)}"
        if len(group) > 1:
            evidence += "; also " + "; ".join(_describe(f) for f in group[1:])
        if result.get("unresolved"):
            evidence += "; names the notes never define: " + ", ".join(result["unresolved"])
        quote = first.get("quote") or result["first_line"]
        errata.append(
            Erratum(classify(first), quote, evidence, result["file"][:3], notes_line(result, first))
        )
    return errata


def judge_snippets(case_id: str, results) -> Finding:
    """One ID's snippets: counts by class as evidence, one erratum per faulty note line of its code
    snippets (the other classes are shown as what they are, never the notes' code being wrong).
    Decides no verdict: a snippet as written is the notes' wording, never the technique."""
    from harness.contract.claims import Finding

    results = list(results)
    code = [r for r in results if r.get("class") == "code"]
    compiled = [r for r in code if not r.get("compile_error")]
    ran = [r for r in code if r.get("ran")]
    errata = [e for r in results for e in errata_of(r)]
    classes = collections.Counter(r.get("class", "?") for r in results)
    evidence = (
        f"{case_id}: {len(results)} snippets ("
        + ", ".join(f"{c} {classes[c]}" for c in CLASSES if classes[c])
        + f"): {len(compiled)} code compiled, {len(ran)} ran, {len(errata)} errata"
    )
    not_run = [r for r in code if not r.get("ran") and not r.get("compile_error")]
    if not_run:
        evidence += "; not run: " + "; ".join(f"{r['locator']} ({r['not_run']})" for r in not_run)
    shown = [r for r in results if r.get("class") not in ("code", None)]
    if shown:
        evidence += "; shown as what they are: " + ", ".join(f"{r['locator']} {r['class']}" for r in shown)
    context = [f"{r['locator']}: {r['context']}" for r in results if r.get("context")]
    if context:
        evidence += "; context (not errata): " + "; ".join(context)
    elsewhere = [
        f"{r['locator']} L{notes_line(r, f)} ({f['elsewhere']})"
        for r in results
        for f in (*r.get("static", ()), r.get("error"), *r.get("deprecations", ()))
        if f and f.get("elsewhere")
    ]
    if elsewhere:
        evidence += "; judged elsewhere: " + "; ".join(elsewhere)
    return Finding(None, evidence, tuple(errata))
