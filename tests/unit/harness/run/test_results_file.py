"""The results file under faults: written whole or not at all, never lost to a second run, a
leftover journal or a full disk (suite.persist, harness.run.results_file, harness.run.journal)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.run import journal, results_file
from harness.run.finished_points import FinishedPoints
from tests.launcher import PYTEST, ROOT

CHECKS_ONLY = ["suite", "--device", "cpu", "-k", "shape.ops and test_rule", "--benchmark-only", "-q"]


def _run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*PYTEST, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, **kw)


@pytest.mark.integration
def test_a_run_of_checks_only_writes_its_outcomes_and_findings(tmp_path):
    """pytest-benchmark writes nothing when no point was timed, and left a 0-byte file that also
    destroyed the previous results at that path."""
    results = tmp_path / "bench.json"
    run = _run([*CHECKS_ONLY, f"--results={results}"])
    assert run.returncode == 0, run.stdout[-2000:]
    doc = json.loads(results.read_text())
    assert doc["benchmarks"] == [] and doc["machine_info"]["torch"]["label"]
    checks = [o for o in doc["outcomes"] if o["case"] == "shape.ops"]
    assert checks and all(o["outcome"] == "passed" for o in checks)
    assert any(o.get("finding") for o in checks)
    assert not list(tmp_path.glob(".*.tmp")), "the temporary file was renamed into place"


@pytest.mark.integration
def test_the_previous_results_survive_a_run_that_dies(tmp_path):
    results = tmp_path / "bench.json"
    results.write_text('{"previous": true}')
    proc = subprocess.Popen(
        [*PYTEST, *CHECKS_ONLY, f"--results={results}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".bench.json.*.tmp")):  # the run has opened its own file
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.loads(results.read_text()) == {"previous": True}


@pytest.mark.integration
def test_a_second_run_into_the_same_path_is_refused_while_the_first_writes(tmp_path):
    results = tmp_path / "bench.json"
    with open(tmp_path / "bench.json.lock", "a+") as held:
        held.write("pid 12345")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run = _run([*CHECKS_ONLY, f"--results={results}"])
    assert run.returncode == 4, run.stdout[-1000:] + run.stderr[-1000:]
    assert "pid 12345 is writing this results file" in run.stderr
    assert not results.exists()


@pytest.mark.integration
def test_a_leftover_journal_is_kept_not_truncated(tmp_path):
    results = tmp_path / "bench.json"
    left = journal.path_for(results)
    left.write_text('{"kind": "benchmark", "row": {"name": "from a run that was killed"}}\n')
    args = ["suite", "--device", "cpu", "-k", "shape.ops and test_rule", f"--results={results}"]
    run = _run([*args, "-k", "distance.pairwise and test_benchmark and n128 and matmul", "-q"])
    assert run.returncode == 0, run.stdout[-2000:]
    kept = list(tmp_path.glob("bench.json.leftover-*.journal.jsonl"))
    assert len(kept) == 1 and "from a run that was killed" in kept[0].read_text()
    assert f"rebuild its results with: python -m harness.run.journal {kept[0]}" in run.stdout


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


@pytest.mark.integration
def test_a_full_disk_stops_the_run_in_one_line(tmp_path):
    """A full disk once gave two raw ENOSPC tracebacks, no summary and a journal cut to 2 of 6
    points while the run went on. /dev/full stands in for the full disk under the journal."""
    results = tmp_path / "r.json"
    journal.path_for(results).symlink_to("/dev/full")
    run = _run(
        [
            "suite",
            "--device",
            "cpu",
            "-k",
            "distance.pairwise and test_benchmark and (n128 or n256) and matmul",
            "--benchmark-max-time=0.05",
            "-q",
            f"--results={results}",
        ]
    )
    out = run.stdout + run.stderr
    assert run.returncode == 2, out[-2000:]
    assert "Interrupted: the journal could not be written" in out and "No space left on device" in out
    assert "Traceback" not in out and "1 passed" in out, out[-2000:]
    assert json.loads(results.read_text())["suite"]["partial"] is True


def test_a_results_write_that_fails_replaces_nothing_and_raises_nothing(tmp_path):
    target = tmp_path / "r.json"
    target.write_text('{"benchmarks": [], "previous": true}')
    said = []
    file = results_file.ResultsFile(target)
    handle = file.open()
    with results_file.writing(
        file, handle, lambda: {"benchmarks": []}, lambda held: [], said.append
    ) as failed:
        handle.write(b'{"benchmarks": [{"na')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file.temporary))
    assert failed.reason and not failed.interrupted
    assert json.loads(target.read_text())["previous"] is True
    assert (
        len(said) == 1 and "No space left on device" in said[0] and f"{target} was left as it was" in said[0]
    )
    file.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"], "no temporary, no lock left"


@pytest.mark.integration
def test_three_interrupts_during_the_write_end_in_one_line_and_keep_the_journal(tmp_path):
    """Three SIGINTs at the end of a complete run once gave two tracebacks and a stale journal."""
    from tests.launcher import INTERRUPTIBLE_PYTEST

    results = tmp_path / "r.json"
    run = subprocess.run(
        [
            *INTERRUPTIBLE_PYTEST,
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.interrupt_during_write",
            "suite",
            "--device",
            "cpu",
            "-k",
            "distance.pairwise and test_benchmark and n128 and matmul",
            "--benchmark-max-time=0.05",
            "-q",
            f"--results={results}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 2 and "Traceback" not in out and "KeyboardInterrupt" not in out, out[-2000:]
    assert "the results write was cut short by a 3rd signal" in out
    kept = journal.path_for(results)
    assert f"rebuild it from the journal: python -m harness.run.journal {kept}" in out
    assert sum(r["kind"] == "benchmark" for r in journal.read(kept)) == 1 and not results.exists()


@pytest.mark.integration
def test_benchmark_json_is_not_truncated_before_the_lock_and_stale_temporaries_go(tmp_path):
    """--benchmark-json X while another run held X once said "refused" with X already 0 bytes;
    a killed run's ``.X.json.PID.tmp`` stayed for good; "Wrote benchmark data in" named the
    temporary, renamed by then."""
    target = tmp_path / "bench.json"
    target.write_text('{"the first run": "its results"}')
    with open(tmp_path / "bench.json.lock", "a+") as held:
        held.write("pid 12345")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        refused = _run([*CHECKS_ONLY, f"--benchmark-json={target}"])
    assert refused.returncode == 4 and "pid 12345 is writing this results file" in refused.stderr
    assert json.loads(target.read_text()) == {"the first run": "its results"}
    (tmp_path / "bench.json.lock").unlink()

    stale = tmp_path / ".bench.json.99999999.tmp"
    stale.write_text("left by a run that was killed")
    run = _run(
        [
            "suite",
            "--device",
            "cpu",
            "-k",
            "distance.pairwise and test_benchmark and n128 and matmul",
            "--benchmark-max-time=0.05",
            "-q",
            f"--benchmark-json={target}",
        ]
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert f"Wrote benchmark data in: {target}" in run.stdout + run.stderr
    assert len(json.loads(target.read_text())["benchmarks"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"], "no temporary, no lock left"


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


@pytest.mark.integration
def test_two_interrupts_leave_a_partial_json_and_no_unfinished_point(tmp_path):
    """Two SIGINTs 0.3 s apart once wrote a JSON marked complete that held a point measured
    halfway, with no outcome."""
    from tests.launcher import INTERRUPTIBLE_PYTEST

    results = tmp_path / "bench.json"
    args = [
        "suite",
        "--device",
        "cpu",
        "-k",
        "distance.pairwise and benchmark and (n128 or n256)",
        "--benchmark-max-time=0.05",
        "--benchmark-min-rounds=3",
        f"--results={results}",
        "-q",
    ]
    proc = subprocess.Popen(
        [*INTERRUPTIBLE_PYTEST, "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    path = journal.path_for(results)
    deadline = time.monotonic() + 240
    while not (path.exists() and sum(r.get("kind") == "benchmark" for r in journal.read(path)) >= 2):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    doc = json.loads(results.read_text())
    assert doc["suite"]["partial"] is True and "SIGINT" in doc["suite"]["partial_reason"]
    finished = {o["nodeid"] for o in doc["outcomes"] if o.get("outcome") == "passed"}
    assert doc["benchmarks"] and all(
        any(b["fullname"].endswith(n.split("::", 1)[-1]) for n in finished) for b in doc["benchmarks"]
    ), "every point in the JSON has its outcome"


def _marked(marker: str) -> list[tuple[int, str]]:
    """(pid, command) of every live process whose environment carries `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(
                    (int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
                )
        except OSError:
            continue
    return found


@pytest.mark.integration
def test_killing_pytest_during_a_launch_leaves_no_torchrun_or_rank(tmp_path):
    """kill -9 of pytest while two gloo ranks wait in a collective once left torchrun and both
    ranks running (new sessions), holding their ports. The kernel now kills each with its parent."""
    marker = f"SUITE_ORPHAN_PROBE={os.getpid()}-{time.time_ns()}"
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    proc = subprocess.Popen(
        [*PYTEST, "suite/test_distributed.py", "-k", "fault_hanging_rank", "--benchmark-disable", "-q"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while sum("cases.dist_worker" in cmd for _, cmd in _marked(marker)) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the ranks never started"
        time.sleep(0.1)
    assert any("torch.distributed.run" in cmd for _, cmd in _marked(marker))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _marked(marker)
    for pid, _ in left:  # do not leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"left behind: {left}"


def test_the_results_file_replaces_its_target_whole_and_one_run_holds_it(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("the previous run's results")
    file = results_file.ResultsFile(target)
    with pytest.raises(results_file.ResultsFileBusy, match=f"pid {os.getpid()} is writing this results file"):
        results_file.ResultsFile(target)
    handle = file.open()  # the writer wrote nothing: the run's own record is written instead
    assert target.read_text() == "the previous run's results"
    file.commit(handle, lambda: {"benchmarks": [], "outcomes": [{"case": "x.y"}]})
    assert json.loads(target.read_text())["outcomes"] == [{"case": "x.y"}] and handle.closed
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


def test_the_results_file_takes_over_pytest_benchmarks_handle_only_where_a_json_is_wanted(tmp_path):
    options = SimpleNamespace(benchmark_json=None)
    assert results_file.redirect(None, options) is None and options.benchmark_json is None
    theirs = open(tmp_path / "bench.json", "wb")  # pytest-benchmark's handle
    options.benchmark_json = theirs
    file = results_file.redirect(None, options)  # --benchmark-json alone: its file is the target
    assert file.target == tmp_path / "bench.json" and theirs.closed
    assert options.benchmark_json.name == str(file.temporary)
    busy = open(tmp_path / "other.json", "wb")
    with pytest.raises(results_file.ResultsFileBusy):
        results_file.redirect(str(tmp_path / "bench.json"), SimpleNamespace(benchmark_json=busy))
    assert not busy.closed  # a refused run leaves pytest-benchmark's handle as it was
    busy.close()
    options.benchmark_json.close()
    file.close()
    options = SimpleNamespace(benchmark_json=None)
    file = results_file.redirect(str(tmp_path / "r.json"), options)  # --results: no handle needed
    assert file.target == tmp_path / "r.json" and options.benchmark_json.name == str(file.temporary)
    options.benchmark_json.close()
    file.close()


def test_signals_wait_while_the_results_are_written_and_a_failed_write_is_still_committed(tmp_path):
    file = results_file.ResultsFile(tmp_path / "r.json")
    handle, said, settled = file.open(), [], []

    def settle(held):
        settled.append(list(held))
        return ["settled"]

    with pytest.raises(RuntimeError, match="the writer failed"):
        with results_file.writing(file, handle, lambda: {"benchmarks": []}, settle, said.append):
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                pytest.fail("SIGINT was not held while the results were written")
            raise RuntimeError("the writer failed")
    assert settled == [[signal.SIGINT]] and said == ["settled"] and handle.closed
    assert json.loads((tmp_path / "r.json").read_text()) == {"benchmarks": []}
    file.close()
    # the run is ending: a signal held through a write that went well is said, not raised again
    try:
        with results_file.writing(None, None, dict, settle, said.append):
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
