"""The notes as the suite reads them: their text (`text`: quotes checked against the note files,
errata keyed by file and line) and their code snippets, run as written (CATALOG.md: "The notes'
snippets run as written"): parsed (`parse`), mapped to IDs and claims (`map`), classified
(`classify`) and run (`run`); a deprecation told by its meaning (`deprecation`).

Every fenced block of the five notes (``notes/files/``, a verbatim copy of the notes) is
extracted with its file, index, line and language, and given a class (`CLASSES`), decided from
its text (`class_of_text`) unless its `notes.map` entry names one:

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

    python -m notes          # the counts: by class, run, errata by kind and ID
    python -m notes --run 003 --out FILE   # the child: one note's results as JSON

Below the cases (they read the notes from here), above the harness's contract (a finding is its
`Finding`); plain Python, no pytest.
"""
