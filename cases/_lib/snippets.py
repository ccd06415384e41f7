"""The notes' code snippets, run as written (CATALOG.md: "The notes' snippets run as written").

Every fenced block of the five notes (``cases/notes/``, a verbatim copy of the notes) is
extracted with its file, index, line and language, and given a class (`CLASSES`), decided from
its text (`class_of_text`) unless its `cases._lib.snippet_map` entry names one:

* ``code``: the notes' code; the only class compiled, read and run as the notes' code;
* ``transcript``: a REPL session (``>>>`` lines); replayed where the map says so, its output
  compared as context only (what a transcript prints is a claim matter, never an erratum);
* ``source``: an excerpt of a library's own source (torch's BatchNorm, clip_grad_norm_, ...);
* ``signature``: a listed signature (``DataLoader(dataset, batch_size=1, ..., *, ...)``);
* ``pseudo``: pseudo-code (an argument-list sketch, an index formula, ``//``-annotated notation);
* ``shell`` and ``text`` (commands, printed output, data): counted, never run.

A code snippet runs top to bottom as a user would paste it, in one namespace per note file that
holds the seed imports and what the notes defined before it (in a fresh interpreter per note:
the notes change torch's global state), under a timeout. A name the notes never define is not
supplied: the snippet fails with NameError as written. What fails is an erratum of the notes, a
slip of the pen, one per note line (`harness.contract.claims.ErratumKind`):

* does not compile → typo;
* NameError → typo when plainly a slip (a name bound only later, a near spelling of a known
  name, a standard module never imported), removed API when the name came from a torch module
  now gone (``inf`` from ``torch._six``), else raises as written;
* an attribute or import of torch that torch does not have → removed API (typo when a near
  spelling exists: ``appply`` for ``apply``);
* a deprecation (DeprecationWarning, PendingDeprecationWarning, FutureWarning, or any warning
  whose message says deprecated) → deprecated API, on the snippet line that triggered it;
* anything else it raises → raises as written.

Besides what running shows, every code snippet is read statically, run or not: its torch names
(imports, ``dist.all_reduce_multigpu``) are resolved against the installed torch, and its free
names that are plainly slips (bound only later, a near spelling, a lost standard import) are
reported; a free name the notes never define, in code that is not run or never called, is named
in the evidence only (no crash was observed). Lines a case judges itself (a claim, or its own
erratum) are named in the map's ``elsewhere`` and listed in the evidence, never twice.

    python -m cases._lib.snippets          # the counts: by class, run, errata by kind and ID
    python -m cases._lib.snippets --run 003 --out FILE   # the child: one note's results as JSON

Not a case module (underscore: the `cases` scan skips it).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import collections
import difflib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cases._lib.deprecation import is_deprecation

if TYPE_CHECKING:
    from harness.contract.claims import Finding

NOTES_DIR = Path(__file__).resolve().parents[1] / "notes"
REPO_ROOT = Path(__file__).resolve().parents[2]

NOTE_TIMEOUT_S = 300  # one note's child process, all its snippets (the slowest note runs in ~10 s)
SNIPPET_TIMEOUT_S = 60  # one snippet inside it (an accidental infinite loop ends here)

# The namespace every note starts from. The notes use these names bare, as the PyTorch docs and
# tutorials they copy from do after their usual imports (`import torch.nn as nn`, `import
# torch.nn.functional as F`, `from torch.autograd import Function`, ...): a snippet that uses
# `nn` or `np` without importing it follows that convention and is not an erratum. Nothing else
# is supplied: no model, no data, no stand-in for a name the notes never define.
SEED_IMPORTS = (
    "import math",  # math.sqrt in the attention snippet
    "import os",  # os.environ / os.path in the distributed and os.path snippets
    "import random",  # random.shuffle in data_iter
    "import sys",  # sys.argv
    "import numpy as np",  # np.triu, np.pad, np.array
    "import torch",
    "import torch.nn as nn",
    "import torch.nn.functional as F",
    "import torch.optim as optim",
    "import torch.distributed as dist",  # the distributed snippets (read statically, never launched)
    "import torch.multiprocessing as mp",
    "from torch.autograd import Function",  # class BinarizedF(Function)
    "from torch.utils.data import DataLoader, Dataset",  # class MyDataSet(Dataset), DataLoader(...)
)
# Free names whose only source was a torch module that is gone: the notes' code used them bare
# after `from <module> import <name>` was lost. Removed API when the module is absent (checked
# in the child, on the installed torch), a typo otherwise.
REMOVED_PROVIDERS = {"inf": "torch._six"}

PYTHON_TAGS = ("python", "py", "python3", "pycon")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<quote>(?:>[ \t]?)*)(?P<ticks>`{3,})(?P<tag>[^`\s]*)\s*$")
_CLOSE = re.compile(r"^\s*`{3,}\s*$")


@dataclass(frozen=True)
class Snippet:
    file: str  # the note's file name
    index: int  # 0-based, in the order of the file
    line: int  # 1-based line of the opening fence
    tag: str  # the fence's language tag, "" when untagged
    language: str  # "python", "pycon" (a doctest), "shell" or "other"
    source: str

    @property
    def prefix(self) -> str:
        return self.file[:3]

    @property
    def locator(self) -> str:
        return f"{self.prefix}#{self.index}"

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.source.splitlines() if line.strip()), "")

    @property
    def filename(self) -> str:
        """The name it is compiled under (tracebacks and inspect find its lines by it)."""
        return f"<notes {self.locator} {self.file}:{self.line}>"

    @property
    def is_python(self) -> bool:
        return self.language in ("python", "pycon")


def _unquote(line: str, indent: int, depth: int) -> str:
    """A block's line without the list indentation and blockquote markers its fence has."""
    i = 0
    while i < indent and line[i : i + 1] in (" ", "\t"):
        i += 1
    line = line[i:]
    for _ in range(depth):
        m = re.match(r"^[ \t]{0,3}>[ \t]?", line)
        if not m:
            break
        line = line[m.end() :]
    return line


def _is_doctest(source: str) -> bool:
    first = next((line for line in source.splitlines() if line.strip()), "")
    return first.lstrip().startswith(">>>")


def language_of(tag: str, source: str) -> str:
    tag = tag.lower()
    if tag in PYTHON_TAGS:
        return "pycon" if tag == "pycon" else "python"
    if tag in ("bash", "sh", "shell", "console", "zsh"):
        return "shell"
    if tag:
        return "other"
    if _is_doctest(source):
        return "pycon"
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "other"
    bare = (ast.Name, ast.Attribute, ast.Constant)
    if any(not (isinstance(s, ast.Expr) and isinstance(s.value, bare)) for s in tree.body):
        return "python"
    return "other"


CLASSES = ("code", "transcript", "source", "signature", "pseudo", "shell", "text")
"""Only ``code`` is run as the notes' code; the others are shown as what they are."""

# A docstring or body that only a library's own source has: Sphinx roles, a numpydoc/Google
# "Arguments:" section, TorchScript's __constants__, a link to torch's issue tracker.
_SOURCE_MARKS = re.compile(
    r":class:`|^\s*(Arguments|Args):\s*$|__constants__|github\.com/pytorch/pytorch", re.M
)
# `name(params)` optionally `-> result`, the whole of one entry of a signature listing.
_SIGNATURE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)\((?P<params>.*)\)\s*(->.*)?$", re.S)


def _signature_entries(source: str) -> list[str] | None:
    """The snippet split into `name(...)` entries (parentheses balanced across lines), or None."""
    entries, current, depth = [], "", 0
    for line in source.splitlines():
        if not line.strip() and not current:
            continue
        current += line.strip() + " "
        depth += line.count("(") - line.count(")")
        if depth <= 0:
            entries.append(current.strip())
            current, depth = "", 0
    return None if current or not entries else entries


def _is_signature(source: str) -> bool:
    """Every entry reads as a def's parameter list (defaults, a bare `*`, `...` elisions), and at
    least one shows it is documentation, not a call: a default, a `*`, an elision or `-> result`."""
    entries = _signature_entries(source)
    if not entries:
        return False
    documented = False
    for entry in entries:
        m = _SIGNATURE.match(entry)
        if not m:
            return False
        params = re.sub(r"\.\.\.\s*,?\s*", "", m["params"]).rstrip(", ")
        try:
            ast.parse(f"def _({params}): pass")
        except SyntaxError:
            return False
        documented |= bool(re.search(r"=|\*", params)) or "..." in m["params"] or "->" in entry
    return documented


def _is_data(source: str) -> bool:
    stripped = source.strip()
    if stripped[:1] not in "{[":
        return False
    try:
        tree = ast.parse(stripped)
    except SyntaxError:
        return True  # a JSON listing with `...` elisions
    return len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr)


def class_of_text(snippet: Snippet) -> str:
    """The class the text shows; the map overrides it where the text alone cannot tell (an
    excerpt of torch's source with no docstring, a usage sketch)."""
    source = snippet.source
    lines = [line for line in source.splitlines() if line.strip()]
    if snippet.language == "shell":
        return "shell"
    if any(line.lstrip().startswith(">>>") for line in lines):
        return "transcript"
    if _is_signature(source):
        return "signature"
    if _is_data(source):
        return "text"
    if snippet.language == "other":
        return "text"
    code_lines = [line for line in lines if not line.lstrip().startswith("#")]
    if code_lines and all(re.search(r"\S\s*//", line) for line in code_lines):
        return "pseudo"  # every line annotated C-style: notation, not code
    if code_lines and code_lines[0][:1] in (" ", "\t"):
        return "source"  # a method cut out of a class body
    if _SOURCE_MARKS.search(source):
        return "source"
    return "code"


def snippet_class(snippet: Snippet) -> str:
    from cases._lib.snippet_map import SNIPPETS

    entry = SNIPPETS.get(snippet.locator)
    return entry.cls if entry and entry.cls else class_of_text(snippet)


def extract(path: Path) -> list[Snippet]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, depth = len(m["indent"]), m["quote"].count(">")
        body, j = [], i + 1
        while j < len(lines) and not _CLOSE.match(_unquote(lines[j], indent, depth)):
            body.append(_unquote(lines[j], indent, depth))
            j += 1
        source = "\n".join(body) + "\n"
        found.append(Snippet(path.name, len(found), i + 1, m["tag"], language_of(m["tag"], source), source))
        i = j + 1
    return found


def note_files() -> tuple[Path, ...]:
    return tuple(sorted(NOTES_DIR.glob("*.txt")))


@functools.lru_cache(maxsize=None)
def all_snippets() -> tuple[Snippet, ...]:
    return tuple(s for path in note_files() for s in extract(path))


def note_file(prefix: str) -> Path:
    (path,) = [p for p in note_files() if p.name.startswith(prefix)]
    return path


# ---- compiling ------------------------------------------------------------------------------


def _doctest_examples(snippet: Snippet):
    import doctest

    return doctest.DocTestParser().get_examples(snippet.source)


def compile_snippet(snippet: Snippet) -> dict | None:
    """None when it compiles; else its error as a failure record."""
    try:
        if snippet.language == "pycon":
            for example in _doctest_examples(snippet):
                compile(example.source, snippet.filename, "single")
        else:
            compile(snippet.source, snippet.filename, "exec")
    except SyntaxError as exc:  # IndentationError and TabError are SyntaxErrors
        return _failure(
            type(exc).__name__, f"{exc.msg} (line {exc.lineno})", snippet, exc.lineno, text=exc.text
        )
    return None


def _failure(kind: str, message: str, snippet: Snippet, lineno: int | None, text: str | None = None, **kw):
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


# ---- running (the parent side) --------------------------------------------------------------


_RESULTS: dict[str, tuple[dict, ...]] = {}


def run_notes(prefixes) -> dict[str, tuple[dict, ...]]:
    """The notes' results, each note in a fresh interpreter, run once per process (cached); the
    notes not yet run start together (each child spends seconds importing torch)."""
    todo = [p for p in dict.fromkeys(prefixes) if p not in _RESULTS]
    if todo:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
        env.setdefault("OMP_NUM_THREADS", "1")
        with tempfile.TemporaryDirectory(prefix="notes-snippets-") as tmp:
            children = {}
            for prefix in todo:
                cwd = Path(tmp) / prefix  # the files a note's snippets write land here and go with it
                cwd.mkdir()
                out = cwd / "results.json"
                cmd = [sys.executable, "-m", "cases._lib.snippets", "--run", prefix, "--out", str(out)]
                proc = subprocess.Popen(
                    cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
                children[prefix] = (proc, out)
            try:
                for prefix, (proc, out) in children.items():
                    _, stderr = proc.communicate(timeout=NOTE_TIMEOUT_S)
                    if proc.returncode != 0 or not out.exists():
                        raise RuntimeError(
                            f"note {prefix}: the child failed (rc {proc.returncode}): {stderr[-2000:]}"
                        )
                    _RESULTS[prefix] = tuple(json.loads(out.read_text(encoding="utf-8")))
            finally:
                for proc, _ in children.values():
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
    return {p: _RESULTS[p] for p in prefixes}


def run_note(prefix: str) -> tuple[dict, ...]:
    """One note's results (run once per process)."""
    return run_notes([prefix])[prefix]


def results_for(case_id: str) -> list[dict]:
    from cases._lib.snippet_map import SNIPPETS

    prefixes = sorted({loc.split("#")[0] for loc, e in SNIPPETS.items() if e.id == case_id})
    results = run_notes(prefixes)
    return [r for p in prefixes for r in results[p] if SNIPPETS[r["locator"]].id == case_id]


def snippets_check(case_id: str):
    """A `Check` running the ID's snippets (its notes once per process); None if it has none."""
    from cases._lib.snippet_map import SNIPPETS
    from cases.spec import Check

    if not any(e.id == case_id for e in SNIPPETS.values()):
        return None

    def check_notes_snippets(device):
        return judge_snippets(case_id, results_for(case_id))

    check_notes_snippets.__name__ = check_notes_snippets.__qualname__ = "check_notes_snippets"
    return Check(check_notes_snippets, devices=("cpu",), claim=None)


# ---- the child: one note, compiled, read and run --------------------------------------------


def _bound_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


SEED_NAMES = frozenset(_bound_names(ast.parse("\n".join(SEED_IMPORTS))))
"""The names the seed binds: np, torch, nn, F, optim, dist, mp, Function, DataLoader, Dataset, ..."""


def _tree(snippet: Snippet) -> ast.AST:
    if snippet.language == "pycon":
        return ast.parse("".join(e.source for e in _doctest_examples(snippet)))
    return ast.parse(snippet.source)


def _torch_modules(tree: ast.AST) -> dict[str, str]:
    """Names bound to torch modules: the seed's and the snippet's own `import torch.x as y`."""
    aliases = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "optim": "torch.optim"}
    aliases.update({"dist": "torch.distributed", "mp": "torch.multiprocessing"})
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "torch":
                    aliases[a.asname or "torch"] = a.name if a.asname else "torch"
    return aliases


def _close(name: str, candidates) -> str | None:
    """A near spelling of `name` among the candidates: a misspelling (``appply``, ``wold_size``,
    ``init`` for ``int``), not a short name's neighbour (``rnn``/``nn``, ``mx``/``max``) nor a
    plural (``epochs``/``epoch``). The ratio bound 0.85 keeps one slipped letter in a name of
    four or more (``init``/``int``: 2·3/7 = 0.857) and drops one in three (``rnn``/``nn``: 0.8)."""
    if len(name) < 4:
        return None
    for match in difflib.get_close_matches(name, [c for c in candidates if c != name], n=3, cutoff=0.85):
        if match.rstrip("s") != name.rstrip("s"):
            return match
    return None


def _top_level_names(tree: ast.AST) -> set[str]:
    """The names a snippet binds in the note's namespace (not a function's locals or parameters)."""
    names = set()
    for node in getattr(tree, "body", ()):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                names.add(sub.id)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in sub.names)
    return names


def slip_of(name: str, bound: set[str], known: set[str], later: set[str]) -> str:
    """Why a name no one defined before it is plainly a slip of the pen ("" where it is not): the
    notes bind it only in the next snippet (their order slipped: ``h_state``), it is a standard
    module never imported, it is a near spelling of a name in scope (``wold_size``), or one of
    the snippet's own names ends with it glued to a word (a lost comma: parameter
    ``epochoptimizer``, then ``optimizer`` in the body)."""
    if name in later:
        return "the notes bind it only in the next snippet"
    if name in sys.stdlib_module_names:
        return f"a standard module never imported (import {name})"
    close = _close(name, known)
    if close:
        return f"did you mean {close!r}?"
    glued = next(
        (
            b
            for b in sorted(bound)
            if b.endswith(name) and len(b) - len(name) >= 3 and b[-len(name) - 1] != "_"
        ),
        None,
    )
    if glued and len(name) >= 4:
        return f"the snippet's own name is {glued!r}: a lost comma"
    return ""


def static_failures(
    snippet: Snippet,
    defined_before: set[str],
    needs: tuple[str, ...],
    ran: bool,
    later: set[str] = frozenset(),
) -> tuple[list[dict], list[str]]:
    """What reading the snippet shows without running it: (its slips, the names it uses that the
    notes never define). A slip is a free name no one defined before it that is plainly a slip
    (`slip_of`), or a torch name (import, dotted attribute) the installed torch does not have.
    The other never-defined names are listed, not failures: reading alone sees no crash."""
    import importlib

    tree = _tree(snippet)
    bound = _bound_names(tree)
    top = _top_level_names(tree)
    in_scope = bound | defined_before | SEED_NAMES | set(dir(builtins))
    outside = (bound - top) | defined_before | SEED_NAMES | set(dir(builtins)) | set(needs)
    outside |= _comprehension_names(tree)
    stores = _top_level_stores(tree)
    in_functions = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for sub in ast.walk(node)
    }
    later = set(later)
    found, unresolved, seen = [], [], set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or node.id in seen:
            continue
        if node.id in outside:
            continue
        use = (node.lineno, node.col_offset)
        if node.id in top and (id(node) in in_functions or any(at < use for at in stores.get(node.id, ()))):
            continue
        seen.add(node.id)
        provider = REMOVED_PROVIDERS.get(node.id)
        removed = provider if provider and importlib.util.find_spec(provider) is None else None
        why = slip_of(node.id, bound - {node.id}, in_scope - {node.id}, later)
        if not (why or removed):
            unresolved.append(node.id)
            continue
        message = f"name {node.id!r} is not defined before this line ({why or 'no near name'})"
        if removed:
            message += f"; it came from `{removed}`, which torch {_torch_version()} does not have"
        found.append(
            _failure(
                "NameError",
                message,
                snippet,
                getattr(node, "lineno", None),
                name=node.id,
                close_match=_close(node.id, in_scope - {node.id}),
                removed_from=removed,
                slip=why,
                static=True,
                ran=ran,
            )
        )
    found += _missing_torch_names(snippet, tree, ran)
    return sorted(found, key=lambda f: f["line"] or 0), sorted(unresolved)


def _comprehension_names(tree: ast.AST) -> set[str]:
    return {
        sub.id
        for node in ast.walk(tree)
        if isinstance(node, ast.comprehension)
        for sub in ast.walk(node.target)
        if isinstance(sub, ast.Name)
    }


def _top_level_stores(tree: ast.AST) -> dict[str, list[tuple[int, int]]]:
    """Where each name the snippet binds in the note's namespace becomes bound, as (line, column):
    an assignment's targets at the statement's end (its value is evaluated first: ``label =
    ....view(len(label))`` uses `label` unbound), a loop's or `with`'s target where it stands, a
    def, class or import at its statement."""
    stores: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores[node.name].append((node.lineno, node.col_offset))
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                stores[(a.asname or a.name).split(".")[0]].append((node.lineno, node.col_offset))
            return
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            end = (node.end_lineno, node.end_col_offset)
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        stores[sub.id].append(end)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id].append((node.lineno, node.col_offset))
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in getattr(tree, "body", ()):
        visit(statement)
    return stores


def _torch_version() -> str:
    import torch

    return torch.__version__


def _resolve(module_name: str, attrs: list[str]):
    """(missing attribute, object it is missing from) or None when the dotted name resolves."""
    import importlib
    import types

    obj = importlib.import_module(module_name)
    for attr in attrs:
        if hasattr(obj, attr):
            obj = getattr(obj, attr)
            continue
        if isinstance(obj, types.ModuleType):
            try:
                obj = importlib.import_module(f"{obj.__name__}.{attr}")
                continue
            except ImportError:
                pass
        return attr, obj
    return None


def _missing_torch_names(snippet: Snippet, tree: ast.AST, ran: bool) -> list[dict]:
    import importlib

    aliases = _torch_modules(tree)
    found, seen = [], set()

    def add(name, owner, lineno, kind):
        key = (getattr(owner, "__name__", repr(owner)), name)
        if key in seen:
            return
        seen.add(key)
        owner_name = getattr(owner, "__name__", type(owner).__name__)
        close = _close(name, dir(owner))
        message = f"torch {_torch_version()}: {owner_name!s} has no {name!r}"
        if close:
            message += f" (did you mean {close!r}?)"
        found.append(
            _failure(
                kind,
                message,
                snippet,
                lineno,
                name=name,
                close_match=close,
                torch_name=True,
                static=True,
                ran=ran,
            )
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            try:
                module = importlib.import_module(node.module)
            except ImportError as exc:
                if (exc.name or "").split(".")[0] == "torch":
                    add(node.module, importlib.import_module("torch"), node.lineno, "ModuleNotFoundError")
                continue  # a third-party dependency of torch's (tensorboard) that is not installed
            for a in node.names:
                if a.name != "*" and not hasattr(module, a.name):
                    try:
                        importlib.import_module(f"{node.module}.{a.name}")
                    except ImportError:
                        add(a.name, module, node.lineno, "ImportError")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "torch":
                    try:
                        importlib.import_module(a.name)
                    except ImportError:
                        add(a.name, importlib.import_module("torch"), node.lineno, "ModuleNotFoundError")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                missing = _resolve(aliases[value.id], chain)
                if missing:
                    add(missing[0], missing[1], node.lineno, "AttributeError")
    # Only the outermost chain of each attribute expression matters; inner ones resolve or fail alike.
    return found


def _runtime_failure(exc: BaseException, snippet: Snippet, top: set[str], later: set[str]) -> dict:
    import traceback

    lineno = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == snippet.filename:
            lineno = frame.lineno
    extra = {}
    if isinstance(exc, NameError) and not isinstance(exc, UnboundLocalError):
        extra["name"] = exc.name
        known = (set(SEED_NAMES) | set(dir(builtins)) | top) - {exc.name}
        extra["slip"] = slip_of(exc.name or "", top - {exc.name}, known, later)
    elif isinstance(exc, AttributeError):
        obj = getattr(exc, "obj", None)
        extra["name"] = exc.name
        if exc.name and obj is not None:
            extra["close_match"] = _close(exc.name, dir(obj))
        owner = getattr(obj, "__name__", "") if isinstance(obj, type(os)) else type(obj).__module__
        extra["torch_name"] = str(owner).startswith("torch")
    elif isinstance(exc, ImportError):
        extra["name"] = exc.name
        extra["torch_name"] = (exc.name or "").startswith("torch")
        wanted = re.search(r"cannot import name '(\w+)'", str(exc))
        if wanted and exc.name:
            module = sys.modules.get(exc.name)
            extra["close_match"] = _close(wanted[1], dir(module)) if module else None
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if extra.get("slip"):
        message += f" ({extra['slip']})"
    return _failure(type(exc).__name__, message[:400], snippet, lineno, **extra)


class _Timeout(Exception):
    pass


def _snippet_line(snippet: Snippet) -> int | None:
    """The innermost line of the snippet on the current stack (the line that called into torch)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == snippet.filename:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _run(snippet: Snippet, namespace: dict, top=frozenset(), later=frozenset()):
    """Exec one snippet in the note's namespace, top to bottom as pasted: (its failure or None,
    its deprecations, what a transcript printed against the notes: context, never a failure)."""
    import contextlib
    import io
    import linecache
    import signal
    import warnings

    # Registered as a file's lines, so that inspect (TorchScript reads a module's source) and
    # tracebacks find the snippet's code as they would a script's.
    linecache.cache[snippet.filename] = (
        len(snippet.source),
        None,
        snippet.source.splitlines(True),
        snippet.filename,
    )

    def on_alarm(signum, frame):
        raise _Timeout(f"still running after {SNIPPET_TIMEOUT_S} s")

    caught = []

    def show(message, category, filename, lineno, file=None, line=None):
        caught.append((category, str(message), _snippet_line(snippet)))

    failure, context = None, []
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(SNIPPET_TIMEOUT_S)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            warnings.showwarning = show
            if snippet.language == "pycon":
                for example in _doctest_examples(snippet):
                    before = out.tell()
                    exec(compile(example.source, snippet.filename, "single"), namespace)
                    got = out.getvalue()[before:]
                    # Whitespace aside: numpy pads its reprs differently across versions ("[ 11.," / "[11.,").
                    if "".join(got.split()) != "".join(example.want.split()):
                        context.append(
                            f"{example.source.strip()} prints {got.strip()!r}, the notes show "
                            f"{example.want.strip()!r}"
                        )
            else:
                exec(compile(snippet.source, snippet.filename, "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 (SystemExit from argparse too: it is the snippet's)
        failure = _runtime_failure(exc, snippet, set(top), set(later))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    deprecations, seen = [], set()
    for category, text, lineno in caught:
        message = text.splitlines()[0][:300]
        if is_deprecation(category, message) and message not in seen:
            seen.add(message)
            deprecations.append(_failure("Deprecation", f"{message} ({category.__name__})", snippet, lineno))
    return failure, deprecations, context


def _mark_elsewhere(failures, snippet: Snippet, entry) -> None:
    """Failures on a line the map says a case judges itself: kept for the evidence, no erratum."""
    lines = snippet.source.splitlines()
    for f in failures:
        if not f or not f.get("line") or not (1 <= f["line"] <= len(lines)):
            continue
        text = lines[f["line"] - 1].strip()
        for prefix, who in entry.elsewhere if entry else ():
            if text.startswith(prefix):
                f["elsewhere"] = who


def child(prefix: str) -> list[dict]:
    import importlib.util

    from cases._lib.snippet_map import SNIPPETS

    namespace = {"__name__": "__main__", "__builtins__": builtins}
    exec("\n".join(SEED_IMPORTS), namespace)
    snippets = extract(note_file(prefix))
    classes = [
        SNIPPETS[s.locator].cls if s.locator in SNIPPETS and SNIPPETS[s.locator].cls else class_of_text(s)
        for s in snippets
    ]
    tops = []
    for s, cls in zip(snippets, classes):
        try:
            tops.append(_top_level_names(_tree(s)) if cls == "code" else set())
        except SyntaxError:
            tops.append(set())
    defined_before: set[str] = set()
    ran_before: set[str] = set()
    results = []
    for i, (snippet, cls) in enumerate(zip(snippets, classes)):
        entry = SNIPPETS.get(snippet.locator)
        lines = snippet.source.splitlines()
        result = {
            "locator": snippet.locator,
            "file": snippet.file,
            "line": snippet.line,
            "language": snippet.language,
            "class": cls,
            "first_line": snippet.first_line,
            "first_lineno": next((n for n, line in enumerate(lines, 1) if line.strip()), 1),
            "id": entry.id if entry else None,
            "ran": False,
            "not_run": "",
        }
        results.append(result)
        if cls == "transcript":
            if entry and entry.runs:
                _, _, context = _run(snippet, namespace)
                result["ran"] = True
                result["context"] = "; ".join(context) if context else "prints what the notes show"
            else:
                result["not_run"] = "transcript: shown as what it is"
            continue
        if cls != "code":
            result["not_run"] = f"{cls}: shown as what it is, not the notes' code"
            continue
        result["compile_error"] = compile_snippet(snippet)
        if result["compile_error"]:
            result["not_run"] = "does not compile"
            _mark_elsewhere([result["compile_error"]], snippet, entry)
            continue
        later = tops[i + 1] if i + 1 < len(tops) else set()
        missing = [m for m in (entry.requires if entry else ()) if importlib.util.find_spec(m) is None]
        runs = bool(entry and entry.runs and not missing)
        if runs:
            result["error"], result["deprecations"], _ = _run(snippet, namespace, tops[i], later)
            result["ran"] = True
            error = result["error"]
            if error and error["type"] == "NameError" and error.get("name") in defined_before - ran_before:
                error["elsewhere"] = "defined by the notes before it, in a snippet not run here"
            ran_before |= tops[i]
        else:
            result["not_run"] = (
                f"needs {', '.join(missing)} (not installed)"
                if entry and entry.runs
                else entry.reason
                if entry
                else "unmapped"
            )
        needs = entry.need_names if entry else ()
        result["static"], result["unresolved"] = static_failures(snippet, defined_before, needs, runs, later)
        error_name = (result.get("error") or {}).get("name")
        result["static"] = [f for f in result["static"] if not (error_name and f.get("name") == error_name)]
        _drop_consequences(result, snippet)
        _mark_elsewhere(
            [result.get("error"), *result["static"], *result.get("deprecations", ())], snippet, entry
        )
        defined_before |= tops[i]
    return results


def _drop_consequences(result: dict, snippet: Snippet) -> None:
    """A name left unbound by a misspelled import is that import's fault, not a second one
    (``import SummmaryWritter`` then ``SummaryWriter(...)``)."""
    failed_imports = {
        f.get("name")
        for f in [result.get("error"), *result["static"]]
        if f and f["type"] in ("ImportError", "ModuleNotFoundError")
    }
    error = result.get("error") or {}
    if error.get("type") == "ImportError":
        wanted = re.search(r"cannot import name '(\w+)'", error.get("message", ""))
        failed_imports.add(wanted[1] if wanted else None)
    result["static"] = [
        f
        for f in result["static"]
        if not (f["type"] == "NameError" and f.get("close_match") in failed_imports)
    ]


# ---- the counts ------------------------------------------------------------------------------


def summary() -> str:
    snippets = all_snippets()
    prefixes = sorted({s.prefix for s in snippets})
    by_note = run_notes(prefixes)
    results = [r for p in prefixes for r in by_note[p]]
    code = [r for r in results if r["class"] == "code"]
    errata = [(r, e) for r in results for e in errata_of(r)]
    kinds = collections.Counter(e.kind.value for _, e in errata)
    classes = collections.Counter(r["class"] for r in results)
    lines = [
        f"snippets found: {len(results)} in {len(prefixes)} notes",
        "by class: " + ", ".join(f"{c}: {classes[c]}" for c in CLASSES),
        f"code compiled: {sum(not r.get('compile_error') for r in code)}",
        f"code compile failures: {sum(bool(r.get('compile_error')) for r in code)}",
        f"code run: {sum(r['ran'] for r in code)}",
        f"code raising: {sum(bool(r.get('error')) and not r['error'].get('elsewhere') for r in code)}",
        f"code with deprecations: {sum(bool(r.get('deprecations')) for r in code)}",
        f"transcripts replayed (context only): "
        f"{sum(r['ran'] for r in results if r['class'] == 'transcript')}",
        f"errata: {len(errata)} on {len({r['locator'] for r, _ in errata})} snippets",
        "errata by kind: " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())),
        "",
        "per ID (snippets by class; code compiled, ran; errata):",
    ]
    by_id = collections.defaultdict(list)
    for r in results:
        by_id[r["id"] or "?"].append(r)
    for case_id in sorted(by_id):
        rs = by_id[case_id]
        cs = collections.Counter(r["class"] for r in rs)
        py = [r for r in rs if r["class"] == "code"]
        lines.append(
            f"  {case_id}: {len(rs)} snippets ({', '.join(f'{c} {cs[c]}' for c in CLASSES if cs[c])}); "
            f"{sum(not r.get('compile_error') for r in py)} compiled, {sum(r['ran'] for r in py)} ran, "
            f"{sum(len(errata_of(r)) for r in rs)} errata"
        )
    lines += ["", "errata:"]
    for r, e in errata:
        lines.append(f"  {r['id']} {r['locator']} {e.where} [{e.kind.value}] {e.quote[:70]!r}")
        lines.append(f"      {e.evidence[:200]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", metavar="PREFIX", help="the child: run one note, write its results")
    parser.add_argument("--out", help="where the child writes its results (JSON)")
    args = parser.parse_args(argv)
    if args.run:
        out = Path(args.out).resolve()
        with tempfile.TemporaryDirectory(prefix=f"notes-{args.run}-") as cwd:
            os.chdir(cwd)  # the files the snippets write (xxx.pth, runs/) land here and go with it
            results = child(args.run)
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
        return 0
    print(summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
