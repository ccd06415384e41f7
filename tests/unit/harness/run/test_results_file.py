"""The results file under faults, in this process (harness.run.results_file, harness.run.journal): written
whole or not at all, one run holding it, a cut-short run keeping only its finished points, signals
waiting while it is written. The faults on real runs are in tests/integration/test_results_file.py."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.run import journal, results_file
from harness.run.finished_points import FinishedPoints


def test_a_journal_write_error_leaves_whole_records_and_stops_the_run(tmp_path):
    """A full disk once cut the journal mid-record and the run went on, journaling nothing more."""
    path = tmp_path / "j.journal.jsonl"
    log = journal.Journal(path)
    log.header({"machine_info": {}, "benchmarks": []})
    log.benchmark({"name": "a point"})
    real = log._file

    class FullAfterHalf:  # the disk fills halfway through a record (of the journal `real` writes)
        def write(self, text):
            real.write(text[: len(text) // 2])
            real.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def flush(self):
            pass

        def close(self):
            real.close()

    log._file = FullAfterHalf()
    log.benchmark({"name": "another"})
    log.benchmark({"name": "a third"})
    assert log.error.endswith("No space left on device") and log.benchmarks == 1
    log.close()
    assert path.read_text().endswith("\n"), "the half-written record is cut off"
    assert [r["kind"] for r in journal.read(path)] == ["header", "benchmark"]

    stopped = []
    points = FinishedPoints(None, lambda: {"benchmarks": []}, dict, lambda line: None, stopped.append)
    points.json_path = tmp_path / "r.json"
    points.add({"name": "p"})
    real = points.journal._file
    points.journal._file = FullAfterHalf()
    points.add({"name": "q"})
    assert len(stopped) == 1 and "the run stops here" in stopped[0]
    assert f"python -m harness.run.journal {journal.path_for(tmp_path / 'r.json')}" in stopped[0]


def test_a_results_write_that_fails_replaces_nothing_and_raises_nothing(tmp_path):
    target = tmp_path / "r.json"
    target.write_text('{"benchmarks": [], "previous": true}')
    said = []
    file = results_file.ResultsFile(target)
    with results_file.writing(file, lambda: {"benchmarks": []}, lambda held: [], said.append) as failed:
        with open(file.path(), "wb") as handle:  # as pytest-benchmark writes
            handle.write(b'{"benchmarks": [{"na')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file.temporary))
    assert failed.reason and not failed.interrupted
    assert json.loads(target.read_text())["previous"] is True
    assert (
        len(said) == 1 and "No space left on device" in said[0] and f"{target} was left as it was" in said[0]
    )
    file.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"], "no temporary, no lock left"


def test_journal_of_a_run_is_rebuilt_into_results(tmp_path):
    """The journal's rebuild still reads what the run wrote (a run killed after its first point)."""
    path = tmp_path / "r.json.journal.jsonl"
    log = journal.Journal(path)
    log.header({"machine_info": {"torch": {}}, "benchmarks": []})
    log.benchmark({"name": "p", "stats": {"median": 1.0}})
    log.close()
    doc = journal.results_from(journal.read(path), "killed")
    assert len(doc["benchmarks"]) == 1 and doc["suite"]["partial"] is True
    assert Path(path).exists()


def test_the_results_file_replaces_its_target_whole_and_one_run_holds_it(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("the previous run's results")
    file = results_file.ResultsFile(target)
    with pytest.raises(results_file.ResultsFileBusy, match=f"pid {os.getpid()} is writing this results file"):
        results_file.ResultsFile(target)
    # the writer wrote nothing: the run's own record is written instead
    assert target.read_text() == "the previous run's results"
    file.commit(lambda: {"benchmarks": [], "outcomes": [{"case": "x.y"}]})
    assert json.loads(target.read_text())["outcomes"] == [{"case": "x.y"}]
    file.close()
    results_file.ResultsFile(target).close()  # the lock went with the run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_cut_short_run_keeps_only_the_points_whose_call_finished():
    class Point:
        def __init__(self, name, rounds):
            self.name, self.stats = name, type("Stats", (), {"data": [1.0] * rounds})()

        def __bool__(self):
            return bool(self.stats.data)

    done, running, never = Point("done", 5), Point("running", 2), Point("never", 0)
    other = results_file.RecordedBenchmark({"name": "worker's", "stats": {"rounds": 3}})
    points = [done, running, never, other]
    assert results_file.keep_finished(points, {id(done)}, interrupted=False) == (
        [done, running, other],
        ["never (0 rounds)"],
    )
    kept, left_out = results_file.keep_finished(points, {id(done)}, interrupted=True)
    assert kept == [done, other] and left_out == ["running (2 rounds)", "never (0 rounds)"]
    assert results_file.partial_reason("SIGTERM", left_out) == (
        "SIGTERM; left out, unfinished: running (2 rounds), never (0 rounds)"
    )


def test_the_results_file_takes_over_pytest_benchmarks_path_only_where_a_json_is_wanted(tmp_path):
    options = SimpleNamespace(benchmark_json=None)
    assert results_file.redirect(None, options) is None and options.benchmark_json is None
    (tmp_path / "bench.json").write_text("the previous run's results")
    options.benchmark_json = tmp_path / "bench.json"  # pytest-benchmark's option: a path
    file = results_file.redirect(None, options)  # --benchmark-json alone: its file is the target
    assert file.target == tmp_path / "bench.json"
    assert os.fspath(options.benchmark_json) == str(file.temporary)
    assert str(options.benchmark_json) == str(file.target)  # where pytest-benchmark says it wrote
    assert (tmp_path / "bench.json").read_text() == "the previous run's results"  # nothing truncated
    theirs = tmp_path / "other.json"
    with pytest.raises(results_file.ResultsFileBusy):
        results_file.redirect(str(tmp_path / "bench.json"), SimpleNamespace(benchmark_json=theirs))
    file.close()
    options = SimpleNamespace(benchmark_json=None)
    file = results_file.redirect(str(tmp_path / "r.json"), options)  # --results: no path needed
    assert file.target == tmp_path / "r.json" and os.fspath(options.benchmark_json) == str(file.temporary)
    file.close()


def test_a_results_path_that_is_not_a_regular_file_is_refused(tmp_path):
    """A device node given as the results path would be renamed over by the results (/dev/null
    replaced by a JSON file, as root); a folder cannot take them."""
    with pytest.raises(results_file.ResultsFileBusy, match="not a regular file"):
        results_file.ResultsFile("/dev/null")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(results_file.ResultsFileBusy, match="not a regular file"):
        results_file.ResultsFile(fifo)
    with pytest.raises(results_file.ResultsFileBusy, match="is a folder"):
        results_file.ResultsFile(tmp_path)
    assert fifo.exists() and not (tmp_path / "pipe.lock").exists()


def test_signals_wait_while_the_results_are_written_and_a_failed_write_is_still_committed(tmp_path):
    file = results_file.ResultsFile(tmp_path / "r.json")
    said, settled = [], []

    def settle(held):
        settled.append(list(held))
        return ["settled"]

    with pytest.raises(RuntimeError, match="the writer failed"):
        with results_file.writing(file, lambda: {"benchmarks": []}, settle, said.append):
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pytest.fail("SIGINT was not held while the results were written")
            raise RuntimeError("the writer failed")
    assert settled == [[signal.SIGINT]] and said == ["settled"]
    assert json.loads((tmp_path / "r.json").read_text()) == {"benchmarks": []}
    file.close()
    # the run is ending: a signal held through a write that went well is said, not raised again
    try:
        with results_file.writing(None, dict, settle, said.append):
            signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pytest.fail("a signal held through the write was raised again after it")
    assert settled[-1] == [signal.SIGINT]


class BenchmarkHooks:
    """pytest-benchmark's hooks as pytest's hook relay offers them, each call recorded."""

    def __init__(self):
        self.calls: list[str] = []

    def pytest_benchmark_generate_machine_info(self, config):
        self.calls.append("generate_machine_info")
        return {"cpu": {"brand_raw": "slow to ask"}}

    def pytest_benchmark_update_machine_info(self, config, machine_info):
        machine_info["torch"] = {"label": config}

    def pytest_benchmark_generate_commit_info(self, config):
        return {"id": "abc"}

    def pytest_benchmark_update_commit_info(self, config, commit_info):
        commit_info["dirty"] = False

    def pytest_benchmark_generate_json(self, config, benchmarks, include_data, machine_info, commit_info):
        assert benchmarks == [] and include_data
        return {"machine_info": machine_info, "commit_info": commit_info, "benchmarks": benchmarks}

    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        output_json["outcomes"] = [f"outcome {len(self.calls)}"]


def test_the_document_outside_the_writer_is_composed_by_pytest_benchmarks_hooks():
    hooks = BenchmarkHooks()
    document = results_file.Document(hooks, "the config")
    assert document.machine_info() is None  # before the first header the other hooks answer
    header = document.header()
    assert header == {
        "machine_info": {"cpu": {"brand_raw": "slow to ask"}, "torch": {"label": "the config"}},
        "commit_info": {"id": "abc", "dirty": False},
        "benchmarks": [],
    }
    # what the header generated, not what the update hooks added: those run again on the reuse
    assert document.machine_info() == {"cpu": {"brand_raw": "slow to ask"}}
    document.machine_info()["cpu"] = "changed by a reader"
    assert document.machine_info() == {"cpu": {"brand_raw": "slow to ask"}}
    assert document.own_keys() == {"outcomes": ["outcome 1"]}
    empty = document.empty()
    assert empty["outcomes"] == ["outcome 2"] and empty["commit_info"]["id"] == "abc"
    assert hooks.calls == ["generate_machine_info", "generate_machine_info"]


def test_a_results_path_that_cannot_be_written_is_one_line(tmp_path):
    """--results into a folder that cannot be written was an INTERNALERROR traceback."""
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with pytest.raises(results_file.ResultsFileBusy, match="cannot write the results here"):
        results_file.ResultsFile(not_a_folder / "r.json")
