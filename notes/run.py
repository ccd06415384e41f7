"""The notes' code run as written: the parent side (`run_notes`: each note in a fresh interpreter,
once per process) and the child (`child`: one note's snippets compiled, read statically and run
top to bottom in one namespace, under a timeout)."""

from __future__ import annotations

import ast
import builtins
import collections
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from notes.deprecation import is_deprecation

if TYPE_CHECKING:
    pass

from notes.classify import compile_snippet, doctest_examples, make_failure
from notes.parse import (
    NOTE_TIMEOUT_S,
    REMOVED_PROVIDERS,
    REPO_ROOT,
    SEED_IMPORTS,
    SNIPPET_TIMEOUT_S,
    Snippet,
    class_of_text,
    extract,
    note_file,
)

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
                cmd = [sys.executable, "-m", "notes", "--run", prefix, "--out", str(out)]
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
    from notes.map import SNIPPETS

    prefixes = sorted({loc.split("#")[0] for loc, e in SNIPPETS.items() if e.id == case_id})
    results = run_notes(prefixes)
    return [r for p in prefixes for r in results[p] if SNIPPETS[r["locator"]].id == case_id]


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
        return ast.parse("".join(e.source for e in doctest_examples(snippet)))
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
            make_failure(
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
            make_failure(
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
    return make_failure(type(exc).__name__, message[:400], snippet, lineno, **extra)


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
                for example in doctest_examples(snippet):
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
            deprecations.append(
                make_failure("Deprecation", f"{message} ({category.__name__})", snippet, lineno)
            )
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

    from notes.map import SNIPPETS

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
