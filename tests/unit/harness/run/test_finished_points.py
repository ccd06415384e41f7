"""A run's finished points, without a pytest run (harness.run.finished_points): journaled as each test
is reported, header once and outcomes first, a worker's journal left to its parent, and only the
finished points kept when the run is cut short."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.run import journal, results_file
from harness.run.finished_points import FinishedPoints


class Point:
    """What `FinishedPoints` reads of pytest-benchmark's Metadata: true once it has a round."""

    def __init__(self, name: str, rounds: int):
        self.name, self.stats = name, SimpleNamespace(data=[1.0] * rounds)

    def __bool__(self):
        return bool(self.stats.data)

    def as_dict(self, include_data=True):
        return {"name": self.name, "stats": {"rounds": len(self.stats.data)}}


def _fixture(point: Point, has_error: bool = False):
    return SimpleNamespace(stats=point, has_error=has_error)


def _session(tmp_path: Path, disabled: bool = False):
    return SimpleNamespace(
        json=SimpleNamespace(name=str(tmp_path / "bench.json")), disabled=disabled, benchmarks=[]
    )


class Run:
    """The callables a run gives: a header counted, the run's outcomes so far, what it said."""

    def __init__(self, worker: str | None = None):
        self.headers, self.outcomes, self.said = 0, [], []
        self.points = FinishedPoints(worker, self.header, self.own_keys, self.said.append)

    def header(self) -> dict:
        self.headers += 1
        return {"machine_info": {"node": "here"}, "benchmarks": []}

    def own_keys(self) -> dict:
        return {"outcomes": list(self.outcomes)}

    def finish(self, nodeid: str, point: Point | None, outcome: str) -> None:
        """One test's call phase, then the record taking its outcome, then its report."""
        self.points.call_ended(nodeid, _fixture(point) if point is not None else None)
        self.outcomes.append(outcome)
        self.points.reported(nodeid)


def _kinds(path: Path) -> list[str]:
    return [r["kind"] + (f":{len(r['extend'])}" if "extend" in r else "") for r in journal.read(path)]


def test_each_point_is_journaled_under_one_header_with_every_outcome_before_it(tmp_path):
    run = Run()
    run.points.start(_session(tmp_path), tmp_path / "r.json")
    path = journal.path_for(tmp_path / "r.json")  # --results wins over pytest-benchmark's own file
    run.finish("t::check", None, "check passed")
    assert not path.exists()  # a run that has timed nothing has no journal yet
    run.finish("t::a", Point("a", 3), "a passed")
    run.finish("t::check2", None, "check2 passed")
    run.finish("t::b", Point("b", 2), "b passed")
    run.points.close()
    assert run.headers == 1
    assert _kinds(path) == ["header", "extra:2", "benchmark", "extra:1", "extra:1", "benchmark"]
    rebuilt = journal.results_from(journal.read(path), "killed")
    assert [b["name"] for b in rebuilt["benchmarks"]] == ["a", "b"]
    assert rebuilt["outcomes"] == ["check passed", "a passed", "check2 passed", "b passed"]


def test_a_point_with_no_round_or_an_error_is_not_finished_and_a_cut_short_run_leaves_it_out(tmp_path):
    run = Run()
    session = _session(tmp_path)
    run.points.start(session, None)
    done, failed, running = Point("done", 4), Point("failed", 3), Point("running", 1)
    session.benchmarks[:] = [done, failed, running, Point("empty", 0)]
    run.points.call_ended("t::done", _fixture(done))
    run.points.call_ended("t::failed", _fixture(failed, has_error=True))
    run.points.call_ended("t::empty", _fixture(Point("empty", 0)))
    assert run.points.pending == {"t::done": done}
    run.points.keep(session, interrupted=True)
    assert session.benchmarks == [done]
    doc: dict = {}
    run.points.mark_partial(doc, "")
    assert doc == {}  # a run that was not cut short is not partial
    run.points.mark_partial(doc, "SIGTERM")
    assert doc["suite"]["partial"] is True
    assert doc["suite"]["partial_reason"] == (
        "SIGTERM; left out, unfinished: failed (3 rounds), running (1 rounds), empty (0 rounds)"
    )
    run.points.close()


def test_a_point_another_process_measured_joins_the_session_and_the_journal(tmp_path):
    run = Run()
    session = _session(tmp_path)
    run.points.start(session, None)
    run.points.add_recorded({"name": "worker's", "stats": {"rounds": 3}}, session)
    run.points.add_recorded({"name": "no session", "stats": {"rounds": 1}}, None)
    run.points.close()
    (recorded,) = session.benchmarks
    assert isinstance(recorded, results_file.RecordedBenchmark) and recorded.name == "worker's"
    rows = [
        r["row"]["name"]
        for r in journal.read(tmp_path / "bench.json.journal.jsonl")
        if r["kind"] == "benchmark"
    ]
    assert rows == ["worker's", "no session"]


def test_a_run_that_writes_no_json_journals_nothing(tmp_path):
    for session in (None, _session(tmp_path, disabled=True), SimpleNamespace(json=None, disabled=False)):
        run = Run()
        run.points.start(session, None)
        run.finish("t::a", Point("a", 3), "a passed")
        assert run.points.journal is None and run.points.settle([]) == []
    assert list(tmp_path.iterdir()) == []


def test_a_journal_an_earlier_run_left_is_kept_and_the_run_says_where(tmp_path):
    left = journal.path_for(tmp_path / "r.json")
    left.write_text('{"kind": "benchmark", "row": {"name": "from a run that was killed"}}\n')
    run = Run()
    run.points.start(_session(tmp_path), tmp_path / "r.json")
    run.finish("t::a", Point("a", 3), "a passed")
    run.points.close()
    (kept,) = tmp_path.glob("r.json.leftover-*.journal.jsonl")
    assert "from a run that was killed" in kept.read_text()
    assert run.said == [
        f"a journal left by an earlier run was kept as {kept}; "
        f"rebuild its results with: python -m harness.run.journal {kept}"
    ]


def test_a_worker_journals_from_the_start_and_leaves_header_and_settling_to_its_parent(tmp_path):
    path = tmp_path / "worker.journal.jsonl"
    run = Run(worker=str(path))
    run.points.start(_session(tmp_path), None)
    assert run.points.journal is not None and path.exists()  # the worker's events flow from here
    run.finish("t::check", None, "check passed")
    run.finish("t::a", Point("a", 3), "a passed")
    assert run.points.settle([]) == []
    run.points.close()
    assert run.headers == 0 and _kinds(path) == ["benchmark"] and path.exists()


def test_settling_removes_the_journal_only_when_the_json_holds_its_points(tmp_path):
    run = Run()
    run.points.start(_session(tmp_path), tmp_path / "r.json")
    run.finish("t::a", Point("a", 3), "a passed")
    path = journal.path_for(tmp_path / "r.json")
    (lines,) = run.points.settle([])
    assert "rebuild it from the journal" in lines and path.exists()
    (tmp_path / "r.json").write_text(json.dumps({"benchmarks": [{"name": "a"}]}))
    assert run.points.settle([]) == [] and not path.exists()
