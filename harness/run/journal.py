"""The run's journal: every finished benchmark point appended to a JSON-lines file the moment it
finishes, so a run that is interrupted, killed or crashes loses at most the point in progress.

Why a journal beside the results JSON rather than rewriting the JSON after each point:
pytest-benchmark writes its JSON once, at the end of the session, from objects in memory, and
``--benchmark-json`` truncates the file when the options are parsed. On the H100 a run stopped
at its time limit crashed inside that one write (a point interrupted before its first round had
no data: ``min() iterable argument is empty``) and left an empty file: eight minutes of
measurements gone. Appending one line per point costs a write of a few kB; rewriting a 16 MiB
JSON (``--benchmark-save-data``) after each of 500 points would cost gigabytes of writes, and a
kill in the middle of a rewrite would lose everything again. A line is flushed as it is written,
so a process that dies (SIGKILL, segfault) leaves every earlier line in the file; a truncated last
line is ignored on reading.

Records, one JSON object per line, told apart by ``kind``:

* ``header`` — the pytest-benchmark document without its points (machine_info, commit_info,
  datetime, version), written before the first point;
* ``benchmark`` — one point, exactly as pytest-benchmark writes it into ``benchmarks[]``;
* ``extra`` — the run's own top-level keys (``suite``, ``cases``, ``outcomes``...): a list grows
  by ``extend``, anything else is replaced by ``value``;
* ``logstart`` / ``report`` / ``logfinish`` — test events a worker process streams to the process
  that started it (`harness.run.isolation`); other readers skip them.

``python -m harness.run.journal JOURNAL... [--out FILE]`` turns journals into one results JSON, marked
partial, for when the run died before pytest-benchmark could write its own.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

SUFFIX = ".journal.jsonl"
# Set by the process that starts an isolation worker (`harness.run.isolation`): the worker journals
# to this file, whether or not it writes a results JSON.
WORKER_JOURNAL_ENV = "SUITE_ISOLATION_JOURNAL"
BENCHMARK_KEYS = ("machine_info", "commit_info", "benchmarks", "datetime", "version")


def path_for(results_json: str | Path) -> Path:
    """The journal of a results file: beside it, named after it (``bench.json.journal.jsonl``),
    and not ``*.json``, so `reports build FOLDER` never mistakes it for a results file."""
    path = Path(results_json)
    return path.with_name(path.name + SUFFIX)


def dumps(obj: Any) -> str:
    # pytest-benchmark's own encoder rule (SafeJSONEncoder): what JSON cannot hold is written as
    # its repr, so a line never fails to encode because of an odd parameter.
    return json.dumps(obj, default=lambda o: f"UNSERIALIZABLE[{o!r}]")


class Journal:
    """Append-only writer; every record is one line, flushed before `write` returns."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A journal left by an earlier run that died holds its points: kept under another name,
        # never truncated (`kept` says where, for the run to tell the user).
        self.kept: Path | None = None
        if self.path.exists() and self.path.stat().st_size > 0:
            stamp = int(self.path.stat().st_mtime)
            self.kept = self.path.with_name(
                self.path.name.removesuffix(SUFFIX) + f".leftover-{stamp}{SUFFIX}"
            )
            self.path.rename(self.kept)
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115  (open for the run; `close`)
        self._sent: dict[str, Any] = {}  # extra key → items already written (list) or last value
        self.has_header = False
        self.benchmarks = 0
        self.error: str = ""  # the first write error (a full disk): journaling stops there
        self._whole = 0  # bytes of whole records written

    def write(self, record: dict) -> None:
        if self.error:
            return
        line = dumps(record) + "\n"
        try:
            self._file.write(line)
            self._file.flush()
        except OSError as exc:
            # A full disk: the half-written record is cut off, so the journal stays whole records
            # that `read` and the rebuild take; the caller decides whether the run goes on.
            self.error = f"{self.path}: {exc.strerror or exc}"
            self._cut_to_whole_records()
            return
        self._whole += len(line.encode("utf-8"))

    def _cut_to_whole_records(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()  # its buffer cannot be flushed either; what it held is dropped
        with contextlib.suppress(OSError):
            os.truncate(self.path, self._whole)

    def header(self, results: dict) -> None:
        self.write({"kind": "header", "results": {k: v for k, v in results.items() if k != "benchmarks"}})
        self.has_header = True

    def benchmark(self, row: dict) -> None:
        self.write({"kind": "benchmark", "row": row})
        if not self.error:
            self.benchmarks += 1

    def extras(self, doc: dict) -> None:
        """The run's own keys of `doc` that changed since the last call: the new tail of each
        list (lists only grow: outcomes are appended as tests finish), other values when they
        differ. Keeps the journal linear in the run's length, not quadratic."""
        for key, value in doc.items():
            if key in BENCHMARK_KEYS:
                continue
            if isinstance(value, list):
                done = self._sent.get(key, 0)
                if len(value) > done:
                    self.write({"kind": "extra", "key": key, "extend": value[done:]})
                    self._sent[key] = len(value)
            elif self._sent.get(key, _UNSET) != value:
                self.write({"kind": "extra", "key": key, "value": value})
                self._sent[key] = _copy(value)

    def close(self) -> None:
        try:
            self._file.close()
        except OSError as exc:
            self.error = self.error or f"{self.path}: {exc.strerror or exc}"
            self._cut_to_whole_records()


_UNSET = object()


def _copy(value):
    return json.loads(dumps(value))  # a snapshot: the caller's dict may change in place later


def parse_lines(lines: Iterable[str]) -> Iterator[dict]:
    for line in lines:
        if not line.endswith("\n"):
            return  # the writer died mid-line: everything before it is intact
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            return


def read(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return list(parse_lines(f))


class Tail:
    """Reads the complete lines appended to a journal since the last call (a worker's journal,
    followed while the worker runs)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        complete, _, self._partial = data.rpartition(b"\n")
        if not complete:
            return []
        return list(parse_lines(line.decode("utf-8") + "\n" for line in complete.split(b"\n")))


class JournalError(ValueError):
    """A journal that cannot become a results file; the message is one line."""


def results_from(records: Iterable[dict], reason: str) -> dict:
    """A pytest-benchmark results document of every point in `records`, marked partial."""
    doc: dict | None = None
    rows: list[dict] = []
    extras: dict[str, Any] = {}
    for record in records:
        kind = record.get("kind")
        if kind == "header" and doc is None:
            doc = dict(record["results"])
        elif kind == "benchmark":
            rows.append(record["row"])
        elif kind == "extra":
            if "extend" in record:
                extras.setdefault(record["key"], []).extend(record["extend"])
            else:
                extras[record["key"]] = record["value"]
    if doc is None:
        raise JournalError("no header: the run ended before its first benchmark point finished")
    doc.update(extras)
    doc["benchmarks"] = rows
    mark_partial(doc, reason)
    return doc


def mark_partial(doc: dict, reason: str) -> None:
    """A results document marked cut short, and why (the keys `harness.contract.record.RunInfo` defines)."""
    suite = doc.setdefault("suite", {})
    suite["partial"] = True
    suite["partial_reason"] = reason


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.run.journal",
        description="Rebuild a results JSON (marked partial) from the journal(s) of a run that died "
        "before writing it.",
    )
    parser.add_argument(
        "journals", nargs="+", type=Path, help="journal files; the first one's header is used"
    )
    parser.add_argument(
        "--out", type=Path, help=f"results JSON to write (default: the first journal's name without {SUFFIX})"
    )
    args = parser.parse_args(argv)
    records: list[dict] = []
    try:
        for path in args.journals:
            records.extend(read(path))
        names = ", ".join(p.name for p in args.journals)
        doc = results_from(
            records, f"rebuilt from the journal ({names}): the run ended before writing its JSON"
        )
    except (OSError, JournalError) as exc:
        print(f"{args.journals[0]}: {exc}", file=sys.stderr)
        return 2
    out, note = rebuilt_path(args.out or default_out(args.journals[0]), len(doc["benchmarks"]))
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        # Through a temporary file and a rename: a rebuild cut short leaves nothing half-written.
        text = json.dumps(doc, indent=4, default=lambda o: f"UNSERIALIZABLE[{o!r}]").encode("utf-8")
        # A name ending .gz gets gzip, as the reports read it (plain JSON under .gz was unreadable).
        tmp.write_bytes(gzip.compress(text) if out.name.endswith(".gz") else text)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        print(f"{out}: cannot write the rebuilt results ({exc.strerror or exc})", file=sys.stderr)
        return 2
    print(f"{out}: {len(doc['benchmarks'])} benchmark points, marked partial{note}")
    return 0


def default_out(journal: Path) -> Path:
    """The results file a journal belongs to (``r.json.journal.jsonl`` → ``r.json``); a journal
    of another name (a leftover kept beside a newer one) rebuilds into ``<its name>.json``, a
    name the report's and the gate's folders read."""
    if journal.name.endswith(SUFFIX):
        out = journal.with_name(journal.name[: -len(SUFFIX)])
        return out if out.name.endswith(".json") else out.with_name(out.name + ".json")
    return journal.with_name(journal.name + ".json")


def rebuilt_path(out: Path, points: int = 0) -> tuple[Path, str]:
    """Where the rebuild of `points` points goes: `out`, unless it holds a complete results file
    (one not marked partial, gzip-compressed or not) or a partial one of more points, which a
    rebuild must never replace: then beside it, as ``<stem>.rebuilt.json`` (numbered if that
    exists too)."""
    held = _held(out)
    if held is None or (held[1] and held[0] <= points):
        return out, ""
    stem = out.name
    for suffix in (".gz", ".json"):
        stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem
    candidate, n = out.with_name(f"{stem}.rebuilt.json"), 1
    while candidate.exists():
        n += 1
        candidate = out.with_name(f"{stem}.rebuilt-{n}.json")
    what = "a complete results file" if not held[1] else f"a partial results file of {held[0]} points"
    return candidate, f" (beside {out}, {what}, which is left as it was)"


def _held(path: Path) -> tuple[int, bool] | None:
    """(points, partial) of the results file at `path` (read as the reports read it, gzip or
    not); None where there is none to keep (absent, empty, cut short)."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, EOFError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        return None
    return len(doc["benchmarks"]), bool((doc.get("suite") or {}).get("partial", False))


def _complete(path: Path) -> bool:
    held = _held(path)
    return held is not None and not held[1]


if __name__ == "__main__":
    sys.exit(main())
