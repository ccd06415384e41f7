"""The history: every run kept, in one SQLite file (the standard library's `sqlite3`, nothing to serve).

One row per run (``runs``), keyed by the content hash `reports.load` identifies runs by (the same run
added twice is kept once), with what tells runs apart: commit, branch, dirty, time, the machine key
the gate pools by (`reports.load.machine_key`: CPU vector units, GPU, torch, CUDA), the hardware
alone (the key without its versions, for ``--by torch``), torch and CUDA versions, driver, profile,
threads and the load probe. Beside it, per run, the rows `reports.history.ingest` derives (``speedups``,
``points``, ``verdicts``: this module keeps them, it computes none) and ``documents``, the results file
itself, compressed: the gate's baseline is drawn from it and judged by the gate's own statistics,
unchanged (`baseline_results`).

Concurrency: every write is one ``BEGIN IMMEDIATE`` transaction with a busy timeout, so processes
appending at once queue instead of losing rows. Safety: a file that is not this history (not SQLite,
truncated, another program's database, a newer schema) is refused with one line and never written.
The schema is versioned (``PRAGMA user_version``); `MIGRATIONS` bring an older file up to date in
one transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.contract import record
from reports import load

APPLICATION_ID = 0x54545348  # "TTSH": a technique-suite history (PRAGMA application_id)
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 120_000  # a writer waits this long for another's transaction (a run's add: ~5 s)
# SQLite's own busy wait sits in C, where no signal handler runs: a statement waits at most this
# long, and the wait for the write transaction is a loop in Python (`_begin`), so Ctrl-C and
# SIGTERM end it at once.
STATEMENT_BUSY_MS = 200
FILENAME = "history.sqlite"

# Version 1: runs without branch, hardware or driver; speedups without the report's interval.
SCHEMA_V1 = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    identity TEXT NOT NULL UNIQUE,
    machine TEXT NOT NULL,
    torch TEXT NOT NULL DEFAULT '',
    cuda TEXT NOT NULL DEFAULT '',
    commit_id TEXT NOT NULL DEFAULT '',
    dirty INTEGER,
    time TEXT NOT NULL DEFAULT '',
    profile TEXT NOT NULL DEFAULT '',
    threads INTEGER,
    load TEXT NOT NULL DEFAULT '',
    partial INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    added TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE TABLE documents (run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, doc BLOB NOT NULL);
CREATE TABLE speedups (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_id TEXT NOT NULL, size_label TEXT NOT NULL, x REAL, dtype TEXT NOT NULL, device TEXT NOT NULL,
    fast TEXT NOT NULL, slow TEXT NOT NULL,
    log REAL NOT NULL, var REAL, rounds INTEGER, spread REAL, busy TEXT NOT NULL DEFAULT '',
    paired INTEGER NOT NULL DEFAULT 0, ratios BLOB
);
CREATE INDEX speedups_run ON speedups(run_id);
CREATE TABLE points (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_id TEXT NOT NULL, variant TEXT NOT NULL, size_label TEXT NOT NULL, dtype TEXT NOT NULL,
    device TEXT NOT NULL, rounds INTEGER, median_s REAL, iqr_s REAL, peak_bytes REAL
);
CREATE INDEX points_run ON points(run_id);
CREATE TABLE verdicts (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_id TEXT NOT NULL, claim TEXT NOT NULL DEFAULT '', verdict TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT ''
);
CREATE INDEX verdicts_run ON verdicts(run_id);
"""
# Each entry brings a file from version k to k + 1 (run in the same transaction as the check).
MIGRATIONS = {
    1: """
ALTER TABLE runs ADD COLUMN branch TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN hardware TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN driver TEXT NOT NULL DEFAULT '';
ALTER TABLE speedups ADD COLUMN speedup REAL;
ALTER TABLE speedups ADD COLUMN ci_low REAL;
ALTER TABLE speedups ADD COLUMN ci_high REAL;
ALTER TABLE speedups ADD COLUMN against TEXT NOT NULL DEFAULT '';
UPDATE runs SET hardware = substr(machine, 1, instr(machine || ' · ', ' · ') - 1);
CREATE INDEX runs_machine ON runs(machine, time);
""",
}
RUN_COLUMNS = [
    "id",
    "identity",
    "machine",
    "hardware",
    "torch",
    "cuda",
    "driver",
    "commit_id",
    "branch",
    "dirty",
    "time",
    "profile",
    "threads",
    "load",
    "partial",
    "source",
]


class HistoryError(load.ResultsError):
    """A history file that cannot be used (exit 2, one line naming the file)."""


# --- opening -------------------------------------------------------------------------------------
def _check(db: sqlite3.Connection, path: Path) -> int:
    """The file's schema version, after making sure it is a history this code can read."""
    try:
        integrity = db.execute("PRAGMA quick_check").fetchone()[0]
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise HistoryError(f"{path}: not a history (SQLite: {exc}); left unchanged") from None
    if integrity != "ok":
        raise HistoryError(
            f"{path}: damaged or truncated SQLite file ({str(integrity).splitlines()[0][:120]}); "
            "left unchanged"
        )
    if app != APPLICATION_ID and (tables or app):
        raise HistoryError(
            f"{path}: another program's SQLite database (application_id {app}, tables "
            f"{', '.join(sorted(tables))[:80] or 'none'}), not a history; left unchanged"
        )
    if version > SCHEMA_VERSION:
        raise HistoryError(
            f"{path}: history schema {version}, newer than this code's {SCHEMA_VERSION}; update the suite"
        )
    return version if app == APPLICATION_ID else 0


def _script(db: sqlite3.Connection, script: str) -> None:
    """Statements one by one (executescript would commit the transaction they belong to)."""
    for statement in script.strip().split(";\n"):
        if statement.strip():
            db.execute(statement)


def _create(path: Path) -> None:
    """A new, empty history, put in place whole: SQLite creates its file empty and writes the schema
    after, and a second process opening it in between would see an empty file (refused, as a
    history cut to nothing). So the schema is written into a temporary file, linked into place only
    where no file is (another process's new history wins the race; this one's is dropped)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        db = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            with transaction(db):
                _script(db, SCHEMA_V1)
                for version in range(1, SCHEMA_VERSION):
                    _script(db, MIGRATIONS[version])
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        finally:
            db.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def connect(path, *, create: bool = True):
    """An open history, checked (and migrated or created inside one write transaction where it is
    older or new). A path that does not exist is created only with ``create``."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise HistoryError(f"{path}: no such history")
        _create(path)
    if path.is_dir():
        raise HistoryError(f"{path}: a folder, not a history file")
    elif path.stat().st_size == 0:
        # SQLite reads an empty file as an empty database; here it is a history cut to nothing.
        raise HistoryError(f"{path}: empty file, not a history (truncated?); left unchanged")
    else:
        with path.open("rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise HistoryError(f"{path}: not an SQLite file, so not a history; left unchanged")
    db = sqlite3.connect(str(path), timeout=STATEMENT_BUSY_MS / 1000, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {STATEMENT_BUSY_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        version = _check(db, path)
        if version < SCHEMA_VERSION:
            with transaction(db):
                version = _check(db, path)  # another process may have done it while this one waited
                if version == 0:
                    _script(db, SCHEMA_V1)
                    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    version = 1
                while version < SCHEMA_VERSION:
                    _script(db, MIGRATIONS[version])
                    version += 1
                db.execute(f"PRAGMA user_version = {version}")
        yield db
    finally:
        db.close()


@contextlib.contextmanager
def transaction(db: sqlite3.Connection, wait_s: float | None = None):
    """One write transaction, taken before the first read (BEGIN IMMEDIATE: a second writer waits
    up to `wait_s` instead of failing half-way); rolled back on any error."""
    _begin(db, wait_s)
    try:
        yield db
    except BaseException:
        # SQLite has already rolled back after some errors (a full disk): a second ROLLBACK would
        # raise "no transaction is active" and hide the cause.
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _begin(db: sqlite3.Connection, wait_s: float | None = None) -> None:
    """BEGIN IMMEDIATE, waiting for another writer at most `wait_s` (None: `BUSY_TIMEOUT_MS`), in
    Python, so a signal ends the wait."""
    wait_s = BUSY_TIMEOUT_MS / 1000 if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise sqlite3.OperationalError(
                    f"database is locked: another writer held it for {wait_s:g} s"
                ) from None
            time.sleep(0.05)


def describe_error(exc: BaseException) -> str:
    """One line naming why a history could not be written: read-only, full, locked, or the error."""
    text = str(exc)
    if isinstance(exc, sqlite3.Error):
        if "readonly" in text:
            return "read-only: the history file or its folder cannot be written"
        if "full" in text:
            return "the disk is full"
        if "locked" in text or "busy" in text:
            return f"locked by another writer ({text})"
        return f"SQLite: {text}"
    return text


# --- adding --------------------------------------------------------------------------------------
def identity(doc: dict) -> str:
    """A run's identity: the hash of its content, as `reports.load.load` counts duplicates."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class RunRows:
    """What the history keeps of one run beside its file, derived by `reports.history.ingest`: the
    ``runs`` row (column → value) and the rows of ``speedups``, ``points`` and ``verdicts``, their
    values in the order of `SPEEDUP_COLUMNS`, `POINT_COLUMNS` and `VERDICT_ROW_COLUMNS`, without the
    run's id."""

    run: dict
    speedups: list[tuple]
    points: list[tuple]
    verdicts: list[tuple]


# A point's place (harness.contract.record.KEY_COLUMNS) as the tables name its columns: `case` is a
# word SQL reserves, so `case_id`. The speed-ups' device is the gate's (`reports.gate.where_device`).
KEY_SQL = tuple("case_id" if c == "case" else c for c in record.KEY_COLUMNS)
# Each table's columns in the order `RunRows` gives its values.
SPEEDUP_COLUMNS = (
    *KEY_SQL,
    *"x fast slow log var rounds spread busy paired ratios speedup ci_low ci_high against".split(),
)
POINT_COLUMNS = (*KEY_SQL, "variant", "rounds", "median_s", "iqr_s", "peak_bytes")
VERDICT_ROW_COLUMNS = ("case_id", "claim", "verdict", "evidence")


def run_id(db: sqlite3.Connection, ident: str) -> int | None:
    """The id of the run with this identity, or None where the history does not hold it."""
    row = db.execute("SELECT id FROM runs WHERE identity = ?", (ident,)).fetchone()
    return row[0] if row else None


def insert(db: sqlite3.Connection, ident: str, doc: dict, rows: RunRows, wait_s: float | None = None):
    """Keep one run: its file (compressed) and its rows, in one write transaction. (id, new): a
    run another process added meanwhile is kept once, and new is then False."""
    blob = zlib.compress(json.dumps(doc, default=str).encode(), 6)
    with transaction(db, wait_s):
        again = run_id(db, ident)
        if again is not None:
            return again, False
        cols = ["identity", *rows.run]
        cur = db.execute(
            f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            (ident, *rows.run.values()),
        )
        new_id = cur.lastrowid
        db.execute("INSERT INTO documents (run_id, doc) VALUES (?, ?)", (new_id, blob))
        for table, columns, values in (
            ("speedups", SPEEDUP_COLUMNS, rows.speedups),
            ("points", POINT_COLUMNS, rows.points),
            ("verdicts", VERDICT_ROW_COLUMNS, rows.verdicts),
        ):
            marks = ", ".join("?" * (len(columns) + 1))
            db.executemany(
                f"INSERT INTO {table} (run_id, {', '.join(columns)}) VALUES ({marks})",
                [(new_id, *v) for v in values],
            )
    return new_id, True


# --- reading -------------------------------------------------------------------------------------
def runs(db: sqlite3.Connection) -> pd.DataFrame:
    """Every run, oldest first (by its time, then the order added)."""
    return pd.read_sql_query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY time, id", db)


def speedups(db: sqlite3.Connection) -> pd.DataFrame:
    return pd.read_sql_query(
        f"SELECT run_id, {', '.join(KEY_SQL)}, x, fast, slow, against, log, var, rounds, "
        "spread, busy, paired, speedup, ci_low, ci_high FROM speedups",
        db,
    )


def verdicts(db: sqlite3.Connection) -> pd.DataFrame:
    return pd.read_sql_query("SELECT run_id, case_id, claim, verdict, evidence FROM verdicts", db)


def document(db: sqlite3.Connection, run_id: int) -> dict:
    row = db.execute("SELECT doc FROM documents WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise HistoryError(f"run {run_id}: not in the history")
    return json.loads(zlib.decompress(row[0]))


def baseline_runs(
    db: sqlite3.Connection, machine: str, *, last: int = 5, branch: str = "main", exclude=()
) -> pd.DataFrame:
    """The last ``last`` runs of one machine key on ``branch`` ('' or '*': any), clean trees only,
    none of ``exclude`` (identities: the current run and its rechecks), not cut short."""
    table = runs(db)
    keep = (table["machine"] == machine) & (table["dirty"].fillna(0) == 0) & (table["partial"] == 0)
    if branch not in ("", "*"):
        keep &= table["branch"] == branch
    keep &= ~table["identity"].isin(list(exclude))
    return table[keep].tail(last)


def baseline_results(
    history, current: load.Results, current_paths=(), *, last: int = 5, branch: str = "main"
):
    """The gate's baseline drawn from the history: the last runs of the current run's machine key
    on the baseline branch, read back through `reports.load` exactly as a baseline folder is, so the
    gate's statistics are unchanged; the current run and its rechecks (``current_paths``) are never
    their own baseline. (results, names of the runs used)."""
    if last < 1:
        raise HistoryError(f"--last {last}: at least one run")
    machines = list(dict.fromkeys(current.runs["machine"]))
    if len(machines) != 1:
        raise HistoryError(f"--current holds {len(machines)} machines; gate one machine at a time")
    with connect(history, create=False) as db:
        exclude = (
            [identity(load.read_json(p)) for p in load.collect_paths(current_paths)] if current_paths else []
        )
        chosen = baseline_runs(db, machines[0], last=last, branch=branch, exclude=exclude)
        if chosen.empty:
            on = f" on branch {branch}" if branch not in ("", "*") else ""
            raise HistoryError(
                f"{history}: no run of {machines[0]}{on} to gate against (record a few runs first)"
            )
        with tempfile.TemporaryDirectory(prefix="history-baseline-") as tmp:
            names = []
            for r in chosen.itertuples():
                name = f"history-run{r.id}-{(r.commit_id or 'nocommit')[:10]}.json"
                (Path(tmp) / name).write_text(json.dumps(document(db, int(r.id))), encoding="utf-8")
                names.append(name)
            return load.load([tmp]), names
