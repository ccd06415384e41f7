"""The notes' code snippets, run as written (CATALOG.md: "The notes' snippets run as written").

Every fenced block of the five notes (``cases/notes/``, a verbatim copy of ``../shared/notes``) is
extracted with its file, index, line and language. Each Python snippet is compiled; each that
`cases._lib.snippet_map` marks runnable is run, in the notes' order, in one namespace per note
file that holds what the notes defined before it, in a fresh interpreter per note (the notes
change torch's global state: TF32 flags, seeds) under a timeout. Where a snippet fails, the
failure is an erratum of the notes with the error as evidence, never repaired:

* does not compile (SyntaxError, IndentationError), or uses a name defined nowhere before it
  (NameError: a slip, a missing import) → typo; a name that came from a torch module now gone
  (``inf`` from ``torch._six``) → removed API;
* an attribute or import of torch that torch does not have → removed API (typo when a near
  spelling exists: ``appply`` for ``apply``);
* a deprecation warning → deprecated API;
* anything else it raises (or a doctest whose printed output differs) → wrong statement.

Besides what running shows, every compiled snippet is read statically, run or not: its free
names (minus the names it takes from outside the notes, listed in the map as ``needs``) and its
dotted torch names (``dist.all_reduce_multigpu``) are resolved against the installed torch. A
snippet's failures make one erratum; the first of them (compile, run, static, warning) is its
kind and quote, the others are named in the evidence.

Which language a block is: python when tagged python/py, or untagged and it parses with at least
one statement beyond bare names (``data.idx`` is a file listing), or is a doctest (``>>>``);
shell or other otherwise (counted, never run).

    python -m cases._lib.snippets          # the counts: found, Python, compiled, run, errata by kind and ID
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

if TYPE_CHECKING:
    from harness.contract.record import Finding

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
    from harness.contract.record import ErratumKind

    kind = failure["type"]
    if kind in ("SyntaxError", "IndentationError", "TabError"):
        return ErratumKind.TYPO
    if kind == "NameError":
        return ErratumKind.REMOVED_API if failure.get("removed_from") else ErratumKind.TYPO
    if kind in ("AttributeError", "ImportError", "ModuleNotFoundError"):
        if failure.get("close_match"):
            return ErratumKind.TYPO
        if failure.get("torch_name"):
            return ErratumKind.REMOVED_API
        return ErratumKind.WRONG_STATEMENT
    if kind == "DeprecationWarning":
        return ErratumKind.DEPRECATED_API
    return ErratumKind.WRONG_STATEMENT


def failures_of(result: dict) -> list[dict]:
    """A snippet's failures, the deciding one first: compile, run, static reading, warnings."""
    out = []
    if result.get("compile_error"):
        out.append(result["compile_error"])
    if result.get("error"):
        out.append(result["error"])
    error_name = (result.get("error") or {}).get("name")
    out += [f for f in result.get("static", ()) if f.get("name") != error_name or not error_name]
    out += result.get("deprecations", ())
    return out


def _describe(failure: dict) -> str:
    text = f"{failure['type']}: {failure['message']}"
    if failure.get("static"):
        text += " (read statically, not run)" if not failure.get("ran") else " (when called)"
    return text


def judge_snippets(case_id: str, results) -> Finding:
    """One ID's snippets: counts as evidence, one erratum per failing snippet (its first failure
    decides the kind and the quote; the rest are named in the evidence). Decides no verdict: a
    snippet as written is the notes' wording, never the technique."""
    from harness.contract.record import Erratum, Finding

    results = list(results)
    python = [r for r in results if r["language"] in ("python", "pycon")]
    compiled = [r for r in python if not r.get("compile_error")]
    ran = [r for r in python if r.get("ran")]
    errata = []
    for r in results:
        failures = failures_of(r)
        if not failures:
            continue
        first = failures[0]
        evidence = f"{r['locator']} (line {r['line']}): {_describe(first)}"
        if len(failures) > 1:
            evidence += "; also " + "; ".join(_describe(f) for f in failures[1:])
        errata.append(Erratum(classify(first), first.get("quote") or r["first_line"], evidence))
    not_run = [r for r in python if not r.get("ran") and not r.get("compile_error")]
    evidence = (
        f"{case_id}: {len(results)} snippets: {len(compiled)} compiled, {len(ran)} ran, {len(errata)} failing"
    )
    if not_run:
        evidence += "; not run: " + "; ".join(f"{r['locator']} ({r['not_run']})" for r in not_run)
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
    match = difflib.get_close_matches(name, [c for c in candidates if c != name], n=1, cutoff=0.8)
    return match[0] if match else None


def static_failures(
    snippet: Snippet, defined_before: set[str], needs: tuple[str, ...], ran: bool
) -> list[dict]:
    """What reading the snippet shows without running it: names defined nowhere before it (nor
    in it, the seed, builtins, the standard library or its declared `needs`), and torch names
    (imports, dotted attributes of torch modules) the installed torch does not have."""
    import importlib

    tree = _tree(snippet)
    bound = _bound_names(tree)
    known = bound | defined_before | SEED_NAMES | set(dir(builtins)) | set(sys.stdlib_module_names)
    known |= set(needs)
    found, seen = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in known:
            if node.id in seen:
                continue
            seen.add(node.id)
            provider = REMOVED_PROVIDERS.get(node.id)
            removed = provider if provider and importlib.util.find_spec(provider) is None else None
            message = f"name {node.id!r} is defined nowhere in the notes before it"
            close = _close(node.id, bound | defined_before | SEED_NAMES | set(dir(builtins)))
            if close:
                message += f" (did you mean {close!r}?)"
            if removed:
                message += f"; it came from `{removed}`, which torch {_torch_version()} does not have"
            found.append(
                _failure(
                    "NameError",
                    message,
                    snippet,
                    getattr(node, "lineno", None),
                    name=node.id,
                    close_match=close,
                    removed_from=removed,
                    static=True,
                    ran=ran,
                )
            )
    found += _missing_torch_names(snippet, tree, ran)
    return sorted(found, key=lambda f: f["line"] or 0)


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


def _is_deprecation(category: type, message: str) -> bool:
    if issubclass(category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning)):
        return True
    return bool(re.search(r"deprecat|will be removed|no longer supported", message, re.I))


def _runtime_failure(exc: BaseException, snippet: Snippet) -> dict:
    import traceback

    lineno = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == snippet.filename:
            lineno = frame.lineno
    extra = {}
    if isinstance(exc, NameError):
        extra["name"] = exc.name
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
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return _failure(type(exc).__name__, message[:400], snippet, lineno, **extra)


class _Timeout(Exception):
    pass


def _run(snippet: Snippet, namespace: dict) -> tuple[dict | None, list[dict]]:
    """Exec one snippet in the note's namespace: (its failure or None, its deprecation warnings)."""
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

    failure = None
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(SNIPPET_TIMEOUT_S)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            if snippet.language == "pycon":
                for example in _doctest_examples(snippet):
                    before = out.tell()
                    exec(compile(example.source, snippet.filename, "single"), namespace)
                    got = out.getvalue()[before:]
                    # Whitespace aside: numpy pads its reprs differently across versions ("[ 11.," / "[11.,").
                    if "".join(got.split()) != "".join(example.want.split()):
                        failure = _failure(
                            "OutputMismatch",
                            f"{example.source.strip()} prints {got.strip()!r}, "
                            f"the notes show {example.want.strip()!r}",
                            snippet,
                            None,
                            text=example.source,
                        )
                        break
            else:
                exec(compile(snippet.source, snippet.filename, "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 (SystemExit from argparse too: it is the snippet's)
        failure = _runtime_failure(exc, snippet)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    deprecations, seen = [], set()
    for w in caught:
        message = str(w.message).splitlines()[0][:300]
        if _is_deprecation(w.category, message) and message not in seen:
            seen.add(message)
            lineno = w.lineno if w.filename == snippet.filename else None
            deprecations.append(
                _failure("DeprecationWarning", f"{message} ({w.category.__name__})", snippet, lineno)
            )
    return failure, deprecations


def child(prefix: str) -> list[dict]:
    import importlib.util

    from cases._lib.snippet_map import SNIPPETS

    namespace = {"__name__": "__main__", "__builtins__": builtins}
    exec("\n".join(SEED_IMPORTS), namespace)
    defined_before: set[str] = set()
    results = []
    for snippet in extract(note_file(prefix)):
        entry = SNIPPETS.get(snippet.locator)
        result = {
            "locator": snippet.locator,
            "file": snippet.file,
            "line": snippet.line,
            "language": snippet.language,
            "first_line": snippet.first_line,
            "id": entry.id if entry else None,
            "ran": False,
            "not_run": "",
        }
        results.append(result)
        if not snippet.is_python:
            result["not_run"] = f"{snippet.language} (tag {snippet.tag or 'none'}), not Python"
            continue
        result["compile_error"] = compile_snippet(snippet)
        if result["compile_error"]:
            result["not_run"] = "does not compile"
            continue
        missing = [m for m in (entry.requires if entry else ()) if importlib.util.find_spec(m) is None]
        runs = bool(entry and entry.runs and not missing)
        if runs:
            result["error"], result["deprecations"] = _run(snippet, namespace)
            result["ran"] = True
        else:
            result["not_run"] = (
                f"needs {', '.join(missing)} (not installed)"
                if entry and entry.runs
                else entry.reason
                if entry
                else "unmapped"
            )
        result["static"] = static_failures(snippet, defined_before, entry.needs if entry else (), runs)
        defined_before |= _bound_names(_tree(snippet))
    return results


# ---- the counts ------------------------------------------------------------------------------


def summary() -> str:
    snippets = all_snippets()
    prefixes = sorted({s.prefix for s in snippets})
    by_note = run_notes(prefixes)
    results = [r for p in prefixes for r in by_note[p]]
    python = [r for r in results if r["language"] in ("python", "pycon")]
    failing = [r for r in results if failures_of(r)]
    kinds = collections.Counter(classify(failures_of(r)[0]).value for r in failing)
    lines = [
        f"snippets found: {len(results)} in {len(prefixes)} notes "
        f"({collections.Counter(r['language'] for r in results)})",
        f"Python: {len(python)}",
        f"compiled: {sum(not r.get('compile_error') for r in python)}",
        f"compile failures: {sum(bool(r.get('compile_error')) for r in python)}",
        f"run: {sum(r['ran'] for r in python)}",
        f"raising: {sum(bool(r.get('error')) for r in python)}",
        f"with deprecation warnings: {sum(bool(r.get('deprecations')) for r in python)}",
        f"static findings only (not raised): "
        f"{sum(bool(r.get('static')) and not r.get('error') and not r.get('compile_error') for r in python)}",
        f"failing snippets (errata): {len(failing)}",
        "errata by kind: " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())),
        "",
        "per ID (snippets: compiled, ran, failing):",
    ]
    by_id = collections.defaultdict(list)
    for r in results:
        by_id[r["id"] or "?"].append(r)
    for case_id in sorted(by_id):
        rs = by_id[case_id]
        py = [r for r in rs if r["language"] in ("python", "pycon")]
        lines.append(
            f"  {case_id}: {len(rs)} snippets, {sum(not r.get('compile_error') for r in py)} compiled, "
            f"{sum(r['ran'] for r in py)} ran, {sum(bool(failures_of(r)) for r in rs)} failing"
        )
    lines += ["", "errata:"]
    for r in failing:
        f = failures_of(r)
        lines.append(
            f"  {r['id']} {r['locator']} L{r['line']} [{classify(f[0]).value}] {f[0]['quote'][:70]!r}"
        )
        lines.append(f"      {_describe(f[0])[:160]}" + (f" (+{len(f) - 1} more)" if len(f) > 1 else ""))
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
