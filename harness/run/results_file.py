"""A run's results JSON, written so that nothing measured is lost and a reader never sees half a
file; the run's journal (`harness.run.journal`) is the fallback for a run that dies first.

* pytest-benchmark (5.3 and later) writes its JSON once, opening the path of ``--benchmark-json``
  at the write, not when the options are parsed (5.2 and earlier opened, and truncated, the file
  at the parse, before any lock: the suite needs 5.3). The path given to pytest-benchmark is a
  temporary file beside the target, renamed over it when the run ends (`ResultsFile`): the
  previous file stays until then, and an exclusive lock on ``<target>.lock`` keeps a second run
  from writing into the same path. The temporaries a killed run left beside the target are
  removed by the next run that takes the lock. The target must be a regular file or absent: a
  device node or a folder given as the results path is refused before the first test.
* A run cut short keeps only the points whose call finished (`keep_finished`): an interrupted
  point has too few rounds and an incomplete extra_info, and one with no round at all made
  pytest-benchmark's writer crash (``min() iterable argument is empty``) and leave an empty file.
  The JSON says ``suite.partial`` and why.
* Once the JSON holds every journaled point the journal is removed; if it does not (the process
  died, the writer failed), the journal stays and the run says how to rebuild the JSON from it
  (`settle_journal`).
* SIGINT and SIGTERM wait while the JSON is written (`writing`): a second Ctrl-C, or a `timeout`
  that fires at the end, would cut the one write short. A write that fails (a full disk) or that
  a third signal cuts short replaces nothing: the previous file stays, the journal is kept whole,
  and the run says so in one line with the command that rebuilds the JSON.
* The parts of the document written outside pytest-benchmark's writer (the journal's header, the
  whole file of a run that timed nothing) are composed by its own hooks (`Document`), so they
  hold what its JSON would.

Plain Python; the pytest glue is `suite.persist`.
"""

from __future__ import annotations

import contextlib
import copy
import glob
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.host import signals
from harness.run import journal as journals


class ResultsFileBusy(RuntimeError):
    """Another run holds the results file's lock; the message names it."""


class TemporaryPath(os.PathLike):
    """What pytest-benchmark is given as ``--benchmark-json``: it opens the temporary file
    (``os.fspath``) and says where it wrote by ``str``, which names the target the temporary is
    renamed to (its "Wrote benchmark data in: ..."), since the temporary is gone by then."""

    def __init__(self, temporary: Path, target: Path):
        self.temporary, self.target = temporary, target

    def __fspath__(self) -> str:
        return str(self.temporary)

    def __str__(self) -> str:
        return str(self.target)


class ResultsFile:
    """The results JSON at `target`, written into `temporary` and renamed over it by `commit`."""

    def __init__(self, target: str | Path):
        self.target = Path(os.path.abspath(target))
        if self.target.is_dir():
            raise ResultsFileBusy(f"{self.target}: is a folder; name a file for the results")
        if self.target.exists() and not self.target.is_file():
            # A device node (/dev/null) or a pipe would be renamed over by the results.
            raise ResultsFileBusy(f"{self.target}: is not a regular file; name a file for the results")
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self._lock = _lock(self.target)
        except OSError as exc:  # a folder that cannot be written: one line, before the first test
            raise ResultsFileBusy(
                f"{self.target}: cannot write the results here ({_describe(exc)})"
            ) from None
        self.removed = _remove_stale_temporaries(self.target)  # safe: no other run holds the lock
        self.temporary: Path | None = self.target.with_name(f".{self.target.name}.{os.getpid()}.tmp")

    def path(self) -> TemporaryPath:
        """The path pytest-benchmark writes into: the temporary file, named after the target."""
        return TemporaryPath(self.temporary, self.target)

    def commit(self, empty: Callable[[], dict], *, written: bool = True) -> bool:
        """The temporary file renamed over the target; where the writer wrote nothing (no point
        was timed: a run of checks, or --benchmark-disable) the document `empty()` gives is written
        instead, so outcomes and findings are never lost. Where the writer did not finish
        (`written` false: it raised) a temporary that is not a whole document is discarded and the
        target left as it was. True where the target was replaced. An OSError (a full disk)
        discards the temporary and propagates."""
        if self.temporary is None:
            return False
        try:
            if points_in(self.temporary) < 0:
                if not written:
                    self.discard()
                    return False
                self.temporary.write_text(json.dumps(empty(), indent=4, default=str), encoding="utf-8")
            os.replace(self.temporary, self.target)
        except OSError:
            self.discard()
            raise
        self.temporary = None
        return True

    def discard(self) -> None:
        if self.temporary is not None:
            self.temporary.unlink(missing_ok=True)
            self.temporary = None

    def close(self) -> None:
        """The lock released (its file removed: a lock file is no result); a temporary file never
        committed (a usage error, a crash) removed."""
        self.discard()
        # Unlinked while still held: a run that opened it before is refused by the lock, and one
        # that opens it after gets a new file, by which time this run has written its results.
        Path(self._lock.name).unlink(missing_ok=True)
        self._lock.close()


def redirect(target: str | None, options) -> ResultsFile | None:
    """pytest-benchmark's ``--benchmark-json`` (`options.benchmark_json`, a path) replaced by the
    temporary file of a `ResultsFile` of the suite's --results (`target`) or else of that path;
    None where the run writes no JSON. Raises `ResultsFileBusy` where another run holds the target
    or the target is not a regular file."""
    given = getattr(options, "benchmark_json", None)
    if not target and not given:
        return None
    results = ResultsFile(target or os.fspath(given))
    options.benchmark_json = results.path()
    return results


def _remove_stale_temporaries(target: Path) -> list[Path]:
    """The temporary files a killed run left beside `target` (``.<name>.<pid>.tmp``), removed."""
    removed = []
    for stale in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        pid = stale.name[len(target.name) + 2 : -len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid():
            stale.unlink(missing_ok=True)
            removed.append(stale)
    return removed


class WriteFailed:
    """What `writing` saw go wrong: "" where the results were written."""

    def __init__(self):
        self.reason = ""
        self.interrupted = False  # cut short by a signal, not by the disk


@contextlib.contextmanager
def writing(
    results: ResultsFile | None,
    empty: Callable[[], dict],
    settle: Callable[[list[int]], list[str]],
    say: Callable[[str], None],
) -> Iterator[None]:
    """The block in which pytest-benchmark writes the JSON (into `results`' temporary), with SIGINT
    and SIGTERM held; they are not raised again after it: the run is ending, and `settle` says
    which arrived.
    After the block: the file committed (`ResultsFile.commit`, `empty` as there), then
    `settle(held)` given the signals that arrived (`finished_points.FinishedPoints.settle`), and
    each line it gives said. A write that fails with an OSError (a full disk, a target that
    cannot be written) or that the escape signal cuts short is not raised: it is said in one line
    and yielded `WriteFailed.reason` says it, for the caller's exit status; the previous file
    stays and `settle` keeps the journal, whose rebuild it names."""
    failed = WriteFailed()
    with signals.held(redeliver=False) as held:
        try:
            yield failed
        except OSError as exc:
            failed.reason = f"could not write the results ({_describe(exc)})"
        except KeyboardInterrupt:
            failed.interrupted = True
            failed.reason = f"the results write was cut short by a {signals.ESCAPE_AFTER}rd signal"
        finally:  # any other error of the writer (a bug) is raised after this, the run's record kept
            if results is not None:
                try:
                    results.commit(empty, written=not failed.reason)
                except OSError as exc:
                    failed.reason = failed.reason or f"could not write the results ({_describe(exc)})"
            if failed.reason:
                target = results.target if results is not None else "the results file"
                say(f"{failed.reason}; {target} was left as it was")
            for line in settle(held):
                say(line)


def _describe(exc: OSError) -> str:
    where = exc.filename or ""
    return f"{where}: {exc.strerror}" if where and exc.strerror else str(exc.strerror or exc)


def _lock(target: Path):
    """An exclusive lock on ``<target>.lock`` for the run's length: two runs writing one results
    file would lose each other's points."""
    import fcntl

    handle = open(target.with_name(target.name + ".lock"), "a+")  # noqa: SIM115  (held for the run)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another run"
        handle.close()
        raise ResultsFileBusy(
            f"{target}: {holder} is writing this results file; give this run another path"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def points_in(path: Path | None) -> int:
    """The benchmark points a results JSON holds; -1 where it is missing, empty or truncated."""
    try:
        return len(json.loads(path.read_text(encoding="utf-8"))["benchmarks"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return -1


class RecordedBenchmark:
    """A finished point measured by another process (an isolation worker), shaped like
    pytest-benchmark's `Metadata` in what its JSON writer, summary table and --benchmark-compare
    read, so the run's one JSON and table hold it like a point of this session."""

    has_error = False

    def __init__(self, row: dict):
        self.row = row
        for key in ("name", "fullname", "group", "param", "params", "extra_info"):
            setattr(self, key, row.get(key))

    def __bool__(self):
        return bool((self.row.get("stats") or {}).get("rounds"))

    def __getitem__(self, key):
        stats = self.row.get("stats") or {}
        return stats[key] if key in stats else self.row[key]

    def as_dict(self, include_data=True, flat=False, stats=True, cprofile=None):
        out = {k: v for k, v in self.row.items() if k != "stats"}
        if stats:
            values = dict(self.row.get("stats") or {})
            if not include_data:
                values.pop("data", None)
            if flat:
                out.update(values)
            else:
                out["stats"] = values
        return out


def keep_finished(points: list, finished: set[int], interrupted: bool) -> tuple[list, list[str]]:
    """The points the JSON keeps, and the others as ``name (N rounds)``: a point with no round is
    never kept; after an interrupt, only those whose call finished (`finished`: their ``id()``)
    or that another process finished."""
    kept, left_out = [], []
    for point in points:
        done = isinstance(point, RecordedBenchmark) or id(point) in finished
        if point and (done or not interrupted):
            kept.append(point)
        else:
            left_out.append(f"{point.name} ({_rounds(point)} rounds)")
    return kept, left_out


def _rounds(point) -> int:
    if isinstance(point, RecordedBenchmark):
        return int((point.row.get("stats") or {}).get("rounds") or 0)
    return len(point.stats.data)


def partial_reason(interrupted: str, left_out: list[str]) -> str:
    return interrupted + (f"; left out, unfinished: {', '.join(left_out)}" if left_out else "")


def settle_journal(journal: journals.Journal | None, json_path: Path | None, held: list[int]) -> list[str]:
    """After the JSON is written: the journal closed, and removed where the JSON holds every point
    it journaled; the lines the run should print (signals held during the write, a journal that
    failed, a JSON to rebuild)."""
    lines = []
    if held:
        names = ", ".join(signal.Signals(s).name for s in held)
        lines.append(f"{names} arrived while the results were being written; held until they were")
    if journal is None:
        return lines
    journal.close()
    if journal.error:
        lines.append(f"the journal could not be written ({journal.error}); the results JSON has every point")
    if points_in(json_path) >= journal.benchmarks:
        journal.path.unlink(missing_ok=True)
    else:
        lines.append(
            f"{json_path} does not hold the {journal.benchmarks} points the run "
            f"finished; rebuild it from the journal: python -m harness.run.journal {journal.path}"
        )
    return lines


class Document:
    """pytest-benchmark's results document composed by its own hooks outside its writer, so the
    journal's header and the file of a run that timed nothing hold what its JSON would. `hooks`
    holds pytest-benchmark's hooks by name (pytest's hook relay), each called with `config`."""

    def __init__(self, hooks, config):
        self.hooks = hooks
        self.config = config
        self._machine: dict | None = None

    def _hook(self, name: str, **kwargs):
        return getattr(self.hooks, name)(config=self.config, **kwargs)

    def header(self) -> dict:
        """The document without its points: machine_info, commit_info, datetime, version."""
        self._machine = self._hook("pytest_benchmark_generate_machine_info")
        machine_info = copy.deepcopy(self._machine)
        self._hook("pytest_benchmark_update_machine_info", machine_info=machine_info)
        commit_info = self._hook("pytest_benchmark_generate_commit_info")
        self._hook("pytest_benchmark_update_commit_info", commit_info=commit_info)
        return self._hook(
            "pytest_benchmark_generate_json",
            benchmarks=[],
            include_data=True,
            machine_info=machine_info,
            commit_info=commit_info,
        )

    def machine_info(self) -> dict | None:
        """The machine as the last header described it, or None before the first header.

        The machine does not change within a run: the header's description is reused for the
        JSON rather than asking cpuinfo again (over a second on a loaded 2-core machine)."""
        return copy.deepcopy(self._machine) if self._machine is not None else None

    def own_keys(self) -> dict:
        """The run's own keys (``suite``, ``cases``, ``outcomes``...) as the hooks that fill the
        JSON give them now."""
        keys: dict = {}
        self._hook("pytest_benchmark_update_json", benchmarks=[], output_json=keys)
        return keys

    def empty(self) -> dict:
        """The whole document of a run with no point: the header and the run's own keys."""
        doc = self.header()
        self._hook("pytest_benchmark_update_json", benchmarks=[], output_json=doc)
        return doc
