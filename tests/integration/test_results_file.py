"""The results file under faults: written whole or not at all, never lost to a second run, a
leftover journal or a full disk (suite.persist, harness.run.results_file, harness.run.journal)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.run import journal
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
    while not (tmp_path / "bench.json.lock").exists():  # the run has taken the results file
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
    while sum("cases._launch.dist_worker" in cmd for _, cmd in _marked(marker)) < 2:
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


@pytest.mark.integration
def test_a_session_that_runs_no_test_leaves_the_results_and_the_history_alone(tmp_path):
    """`--collect-only --results X` (as `suite.estimate -- <args>` runs it) replaced a complete X with
    an empty document and appended that empty run to the history, which the gate then counted."""
    results = tmp_path / "X.json"
    results.write_text('{"previous": true}')
    run = _run([*CHECKS_ONLY, "--collect-only", f"--results={results}"])
    assert run.returncode == 0, run.stdout[-2000:]
    assert json.loads(results.read_text()) == {"previous": True}
    assert "no test ran" in run.stdout
    assert not (tmp_path / "history.sqlite").exists()
    assert not list(tmp_path.glob(".*.tmp")) and not (tmp_path / "X.json.lock").exists()


@pytest.mark.integration
def test_under_xdist_the_controller_owns_the_results_file(tmp_path):
    """`-n 2 --results X`: every worker met the controller's lock ("node down" ten times, exit 5)
    and X became an empty document; now the workers leave the file to the controller, which writes
    the run's outcomes and says timing is off."""
    results = tmp_path / "X.json"
    checks = [a for a in CHECKS_ONLY if a != "--benchmark-only"]  # pytest-benchmark: not with xdist
    run = _run([*checks, "-n", "2", f"--results={results}", "--no-history"])
    assert run.returncode == 0, run.stdout[-2000:]
    assert "node down" not in run.stdout and "timing is off under pytest-xdist" in run.stdout
    doc = json.loads(results.read_text())
    assert any(o["case"] == "shape.ops" and o["outcome"] == "passed" for o in doc["outcomes"])
