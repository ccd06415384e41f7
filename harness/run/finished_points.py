"""A run's finished points, and only those, kept: each journaled (`harness.run.journal`) the moment
its test is reported, so a journal rebuilt after a hard death holds every finished point with its
outcome; and the only points the results JSON keeps when the run is cut short.

* A point is finished when its call phase ended with rounds and no error; it is journaled once
  the test's report is logged, after the run's record has taken the outcome.
* The journal is opened at the first finished point: a run that times nothing leaves none. A
  journal an earlier run left at that path is kept under another name and the run says so.
* The header (the results document without its points) is written once, before that point.
* The run's own keys (``suite``, ``cases``, ``outcomes``...) are written before each point, and
  after each test that ended without one once the journal has its header: a point in the journal
  always has its outcome there too.
* A worker of `harness.run.isolation` journals to the file it was given, from the start (the events it
  streams flow through it); its points go under the header of the process that started it, which
  also settles that journal at the end.
* A journal that cannot be written (a full disk) stops the run after the test at hand (`stop`),
  with one line: what follows could be kept nowhere, and the results JSON at the end needs the
  same disk. The journal is left whole records, and the line names its rebuild.

Plain Python; the pytest glue is `suite.persist`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from harness.run import journal as journals
from harness.run import results_file


class FinishedPoints:
    """The finished points of one process of a run. `header()` gives the results document without
    its points, `own_keys()` the run's own keys as they are now (`results_file.Document` gives
    both), `say(line)` tells the user something worth seeing."""

    def __init__(
        self,
        worker: str | None,
        header: Callable[[], dict],
        own_keys: Callable[[], dict],
        say: Callable[[str], None],
        stop: Callable[[str], None] = lambda why: None,
    ):
        self.worker = worker  # the journal a worker was given (`journal.WORKER_JOURNAL_ENV`), or None
        self.header = header
        self.own_keys = own_keys
        self.say = say
        self.stop = stop  # ends the run after the test at hand, saying why
        self.journal: journals.Journal | None = None
        self.json_path: Path | None = None  # the results JSON the journal sits beside
        self.finished: set[int] = set()  # id() of the Metadata of every point whose call phase ended
        self.pending: dict[str, object] = {}  # node ID → its point, from the call's end to its report
        self.left_out: list[str] = []  # the points a cut-short run left out, as `keep` named them

    def start(self, session, target: Path | None) -> None:
        """At the session's start: a worker's journal opened; otherwise where the results JSON goes
        (`target`, or else the file pytest-benchmark's `session` writes), where the run writes one
        (where it writes none, nothing is journaled)."""
        if self.worker:
            self.journal = journals.Journal(self.worker)  # events flow through it from the start
        elif session is not None and session.json is not None and not session.disabled:
            self.json_path = target or Path(os.path.abspath(session.json.name))

    def call_ended(self, nodeid: str, fixture) -> None:
        """A test's call phase ended; `fixture` is its pytest-benchmark ``benchmark`` fixture, or
        None where it timed nothing."""
        point = getattr(fixture, "stats", None)
        if point is not None and point and not fixture.has_error:
            self.finished.add(id(point))
            self.pending[nodeid] = point

    def reported(self, nodeid: str) -> None:
        """A test's call was reported: its point journaled, or its outcome alone where it has none."""
        point = self.pending.pop(nodeid, None)
        if point is not None:
            self.add(point.as_dict(include_data=True))
        elif self.journal is not None and self.journal.has_header:
            self._write_own_keys()

    def add(self, row: dict) -> None:
        """Journal one finished point (dict as in pytest-benchmark's ``benchmarks[]``)."""
        journal = self._open()
        if journal is None:
            return
        if not self.worker:  # a worker's points go under the header of the process that started it
            if not journal.has_header:
                journal.header(self.header())
            self._write_own_keys()  # first: a point in the journal always has its outcome there too
        journal.benchmark(row)
        if journal.error:
            rebuild = f"python -m harness.run.journal {journal.path}"
            kept = (
                f"the journal keeps {journal.benchmarks} whole points: {rebuild}"
                if journal.benchmarks
                else ("the journal holds no point")
            )
            self.stop(f"the journal could not be written ({journal.error}); the run stops here; {kept}")

    def add_recorded(self, row: dict, session) -> None:
        """A point another process measured for this run: into the points of pytest-benchmark's
        `session` (so the one JSON, the table and --benchmark-compare have it) and into the
        journal."""
        if session is not None:
            session.benchmarks.append(results_file.RecordedBenchmark(row))
        self.add(row)

    def keep(self, session, interrupted: bool) -> None:
        """The points of pytest-benchmark's `session` cut to those the results JSON keeps
        (`results_file.keep_finished`); the rest are named in `left_out`."""
        if session is not None:
            session.benchmarks[:], self.left_out = results_file.keep_finished(
                session.benchmarks, self.finished, interrupted
            )

    def mark_partial(self, doc: dict, interrupted: str) -> None:
        """`doc` marked partial where the run was cut short (`interrupted` says why, "" where it was
        not), naming the points left out."""
        if interrupted:
            journals.mark_partial(doc, results_file.partial_reason(interrupted, self.left_out))

    def settle(self, held: list[int]) -> list[str]:
        """Once the results JSON is written: `results_file.settle_journal` of this process's
        journal, and the lines to say. A worker's journal is settled by the process that started
        it, which read it."""
        return results_file.settle_journal(None if self.worker else self.journal, self.json_path, held)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    def _open(self) -> journals.Journal | None:
        if self.journal is None and self.json_path is not None:
            self.journal = journals.Journal(journals.path_for(self.json_path))
            if self.journal.kept is not None:
                self.say(
                    f"a journal left by an earlier run was kept as {self.journal.kept}; "
                    f"rebuild its results with: python -m harness.run.journal {self.journal.kept}"
                )
        return self.journal

    def _write_own_keys(self) -> None:
        # The run's own keys as the hooks that fill the JSON give them now, so a journal rebuilt
        # after a hard death has the outcomes too.
        self.journal.extras(self.own_keys())
