"""Nothing measured is lost when a run is cut short (suite.persist, harness.run.results_file,
harness.run.journal): real CPU benchmark runs in a subprocess, interrupted mid-way by SIGINT, SIGTERM
or SIGKILL, leave a valid results JSON with every point that finished, marked partial, from which
the report builds."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.run import journal
from harness.run.isolation import PLANT_ENV
from tests.launcher import INTERRUPTIBLE_PYTEST, ROOT

CASES = "tests/data/interrupt_cases.py"
# 12 CPU points of a few tenths of a second each: the signal lands with most of them still to run.
SELECTION = [
    "suite",
    "--device",
    "cpu",
    "-k",
    "distance.pairwise and benchmark and (n128 or n256)",
    "--benchmark-max-time=0.05",
    "--benchmark-min-rounds=3",
]


def _start(args, out: Path, env=None, log: Path | None = None) -> subprocess.Popen:
    env = {**{k: v for k, v in os.environ.items() if k != PLANT_ENV}, **(env or {})}
    with open(log or os.devnull, "w") as output:  # the child has its own copy of the descriptor
        return subprocess.Popen(
            [*INTERRUPTIBLE_PYTEST, "-p", "no:cacheprovider", "-q", *args, f"--benchmark-json={out}"],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def _wait_for(predicate, proc, timeout_s=240.0, what=""):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert proc.poll() is None, f"the run ended (status {proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _ended(proc, timeout_s: float, log: Path, sig: str) -> int:
    """The run's exit status once it ended; a run still going `timeout_s` after the signal fails
    the test with its own output (the caller kills it), which a bare TimeoutExpired would lose."""
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"the run did not end within {timeout_s:.0f} s of {sig}; its output:\n{log.read_text()[-3000:]}"
        )


def _journaled(path: Path) -> list[dict]:
    return [r["row"] for r in journal.read(path) if r.get("kind") == "benchmark"] if path.exists() else []


def _report_builds(results: Path, out: Path) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "reports", "build", str(results), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return (out / "index.html").read_text(encoding="utf-8")


@pytest.mark.integration
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_interrupted_run_keeps_every_finished_point(sig, tmp_path):
    out = tmp_path / "bench.json"
    journal_path = journal.path_for(out)
    log = tmp_path / "run.log"
    proc = _start(SELECTION, out, log=log)
    try:
        _wait_for(lambda: len(_journaled(journal_path)) >= 2, proc, what="two finished points")
        finished = {row["fullname"]: row for row in _journaled(journal_path)}
        proc.send_signal(getattr(signal, sig))
        status = _ended(proc, 120, log, sig)
    finally:
        proc.kill()
        proc.wait()
    output = log.read_text()
    assert "min() iterable argument is empty" not in output
    if sig == "SIGKILL":
        # A hard death: pytest-benchmark never wrote, and its file was never opened (it is opened
        # at the write, suite/benchmark_json.py); the journal is still there and becomes the JSON.
        assert status == -signal.SIGKILL and not out.exists()
        rebuilt = subprocess.run(
            [sys.executable, "-m", "harness.run.journal", str(journal_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert rebuilt.returncode == 0, rebuilt.stderr
    else:
        assert status == pytest.ExitCode.INTERRUPTED, output[-3000:]
    doc = json.loads(out.read_text())
    rows = {b["fullname"]: b for b in doc["benchmarks"]}
    assert set(finished) <= set(rows), "a point that had finished before the signal is missing"
    for name, row in finished.items():
        assert rows[name]["stats"] == row["stats"]
    assert all(b["stats"]["rounds"] >= 3 for b in doc["benchmarks"]), "an unfinished point was kept"
    assert len(rows) < 12, "the run finished before the signal: nothing was interrupted"
    assert doc["suite"]["partial"] is True
    reason = doc["suite"]["partial_reason"]
    assert reason.startswith(sig) if sig != "SIGKILL" else "rebuilt from the journal" in reason, reason
    assert doc["machine_info"]["torch"]["label"] and doc["outcomes"], "the header or the outcomes are missing"
    assert {o["nodeid"] for o in doc["outcomes"] if o["outcome"] == "passed"} >= set(finished)
    if sig != "SIGKILL":
        assert not journal_path.exists(), "the journal stays although the JSON holds every point"
    html = _report_builds(out, tmp_path / "report")
    assert "partial" in html


@pytest.mark.integration
@pytest.mark.parametrize("rounds_before", [0, 1])
def test_point_caught_in_its_rounds_is_left_out(rounds_before, tmp_path):
    """With 0 rounds this is the H100 crash (`min() iterable argument is empty`, empty file)."""
    out, ready, log = tmp_path / "bench.json", tmp_path / "stuck", tmp_path / "run.log"
    proc = _start(
        [CASES, "--benchmark-max-time=0.01"],
        out,
        log=log,
        env={"INTERRUPT_CASES_READY": str(ready), "INTERRUPT_CASES_ROUNDS_BEFORE": str(rounds_before)},
    )
    try:
        _wait_for(ready.exists, proc, what="the stuck point")
        proc.send_signal(signal.SIGINT)
        status = _ended(proc, 60, log, "SIGINT")
    finally:
        proc.kill()
        proc.wait()
    output = log.read_text()
    assert status == pytest.ExitCode.INTERRUPTED, output[-3000:]
    doc = json.loads(out.read_text())
    assert [b["name"] for b in doc["benchmarks"]] == ["test_bench_one", "test_bench_two"]
    reason = doc["suite"]["partial_reason"]
    assert reason.startswith("SIGINT") and f"test_bench_stuck ({rounds_before} rounds)" in reason, reason
