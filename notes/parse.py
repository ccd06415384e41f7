"""The notes' fenced blocks as a reader sees them: each extracted with its file, index, line and
language (`extract`, `all_snippets`), and given a class (`CLASSES`) decided from its text
(`class_of_text`) unless its `notes.map` entry names one. notes/__init__.py says what each class
means and how the notes' code is run."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

NOTES_DIR = Path(__file__).resolve().parent / "files"
REPO_ROOT = Path(__file__).resolve().parents[1]

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
    from notes.map import SNIPPETS

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


def snippet(locator: str) -> Snippet:
    """The notes' snippet at `locator` (``"003#8"``: note prefix, block index), as written, for a case
    that runs the notes' own code. Refused where the notes changed under it: the map's guard (its
    first line, `notes.map`) must still match, so an edited note fails here instead of running
    other code in its place."""
    from notes.map import SNIPPETS, guard_matches

    found = [s for s in all_snippets() if s.locator == locator]
    if len(found) != 1 or locator not in SNIPPETS:
        raise KeyError(f"no snippet {locator!r} in the notes' files and map")
    if not guard_matches(SNIPPETS[locator], found[0].first_line):
        raise ValueError(
            f"snippet {locator} starts {found[0].first_line!r}, not {SNIPPETS[locator].first!r}: the notes "
            "changed; map the snippet again (notes/map.py)"
        )
    return found[0]


def snippet_text(locator: str, first: str | None = None, last: str | None = None) -> str:
    """The text of the notes' snippet at `locator` (guarded as `snippet` is), from its line that
    starts with `first` through its line that starts with `last` (both stripped; the whole snippet
    by default): the part of a snippet a case runs, found by what the notes wrote rather than by
    line numbers that an edit above it would shift."""
    lines = snippet(locator).source.splitlines()
    start = 0 if first is None else _line_starting(lines, first, 0, locator)
    end = len(lines) if last is None else _line_starting(lines, last, start, locator) + 1
    return "\n".join(lines[start:end]) + "\n"


def _line_starting(lines: list[str], text: str, start: int, locator: str) -> int:
    found = next((n for n in range(start, len(lines)) if lines[n].strip().startswith(text)), None)
    if found is None:
        raise ValueError(f"snippet {locator} has no line starting {text!r}: the notes changed")
    return found


def note_file(prefix: str) -> Path:
    (path,) = [p for p in note_files() if p.name.startswith(prefix)]
    return path
