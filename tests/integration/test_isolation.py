"""Isolation from sticky CUDA errors (suite/isolation_plugin.py, harness.run.isolation), on real
pytest runs in a subprocess: a sticky error fails its own test with the assert's text, every other
test has the outcome a run without the error gives it, and the benchmark points measured before and after it
end up in the one results JSON. On CPU the sticky error is simulated (`harness.run.isolation.PLANT_ENV`:
the planted test raises torch's device-side-assert error and every later call in that process
raises it too, as on a dead context); on CUDA a real device-side assert is planted. What the
pytest glue does short of calling pytest's hooks (`State`, `replay_event`, `explain`) is tested in
this process, without a run."""

import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from harness.run import isolation
from tests.launcher import INTERRUPTIBLE_PYTEST, PYTEST, ROOT

# The module's shared run of the suite (alone) is made once: under `-n auto --dist loadgroup` (the
# test command) every test of this module goes to the same worker.
pytestmark = pytest.mark.xdist_group("test_isolation")

QUICK = ["--benchmark-max-time=0.002", "--benchmark-min-rounds=2", "--benchmark-warmup=off"]
# Checks, benchmarks (CPU timed, CUDA skipped with the reason here) and rule checks with findings.
SELECTION = ["suite", "--device", "cpu,cuda", "-k", "onehot.encode and not c1000 and not perf_lint"]
PLANTED = "suite/test_cases.py::test_benchmark[onehot.encode-scatter-b4096-c10-float32-cpu]"
CASES = "tests/data/isolation_cases.py"
# What each test of CASES gives in a run without a planted error.
EXPECTED = {
    "test_bench_first": "passed",
    "test_passes": "passed",
    "test_skips": "skipped",
    "test_fails": "failed",
    "test_planted_here": "passed",
    "test_bench_second": "passed",
    "test_dies_hard": "passed",
    "test_planted_again": "passed",
    "test_bench_third": "passed",
    "test_passes_last": "passed",
}
STICKY = "CUDA error: device-side assert triggered"


def _run(args, tmp: Path, name: str, plant=(), env=None):
    out, junit = tmp / f"{name}.json", tmp / f"{name}.xml"
    full_env = {k: v for k, v in os.environ.items() if k != isolation.PLANT_ENV}
    if plant:
        full_env[isolation.PLANT_ENV] = "\n".join(plant)
    full_env.update(env or {})
    run = subprocess.run(
        [
            *PYTEST,
            "-q",
            *args,
            *QUICK,
            f"--benchmark-json={out}",
            f"--junitxml={junit}",
        ],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    doc = json.loads(out.read_text()) if out.exists() and out.stat().st_size else None
    return run, doc, _junit(junit)


def _junit(path: Path) -> dict[str, tuple[str, str]]:
    """node name → (outcome, message) as the junit XML of the first process tells it."""
    if not path.exists():
        return {}
    results = {}
    for case in ET.parse(path).iter("testcase"):
        child = next(iter(case), None)
        tag = getattr(child, "tag", "")
        kind = {"failure": "failed", "error": "failed", "skipped": "skipped"}.get(tag, "passed")
        results[case.get("name")] = (kind, (child.get("message") or "") if child is not None else "")
    return results


def _outcomes(doc) -> dict[str, tuple]:
    return {
        o["nodeid"]: (o["outcome"], o.get("reason", ""), (o.get("finding") or {}).get("verdict"))
        for o in doc["outcomes"]
    }


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The selection run without a planted error: the outcomes every test has on its own."""
    run, doc, _ = _run(SELECTION, tmp_path_factory.mktemp("alone"), "alone")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return doc


@pytest.mark.integration
def test_sticky_error_fails_its_own_test_and_nothing_else(alone, tmp_path):
    run, doc, _ = _run(SELECTION, tmp_path, "planted", plant=[PLANTED])
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 failed" in run.stdout.splitlines()[-1]
    outcomes, expected = _outcomes(doc), _outcomes(alone)
    assert set(outcomes) == set(expected) and len(outcomes) > 20
    outcome, reason, _ = outcomes.pop(PLANTED)
    assert outcome == "failed" and STICKY in reason
    assert "Assertion `probability tensor contains" in reason  # the kernel's own assert text
    del expected[PLANTED]
    assert outcomes == expected  # every other test: outcome, reason and verdict as when run alone
    kinds = [o[0] for o in outcomes.values()]
    assert kinds.count("passed") >= 10 and "skipped" in kinds

    # The points: all of the run's, in one JSON, in order; before the fault from this process,
    # after it from the worker (this process stopped running tests at the fault).
    order = [b["fullname"] for b in alone["benchmarks"]]
    planted_at = order.index(PLANTED)
    assert planted_at >= 1 and planted_at < len(order) - 1, "no point before or no point after the fault"
    names = [b["fullname"] for b in doc["benchmarks"]]
    assert names == order[:planted_at] + order[planted_at + 1 :]
    assert all(b["stats"]["rounds"] >= 2 and b["stats"]["data"] for b in doc["benchmarks"])
    (hand_over,) = doc["suite"]["isolation"]
    assert hand_over["after"] == PLANTED and hand_over["error"] == STICKY and hand_over["workers"] == 1
    run_order = [o["nodeid"] for o in alone["outcomes"]]
    assert hand_over["tests"] == len(run_order) - run_order.index(PLANTED) - 1
    assert "run in a fresh worker process" in run.stdout


@pytest.mark.integration
def test_second_sticky_error_in_the_worker_hands_over_again(tmp_path):
    planted = [f"{CASES}::test_planted_here", f"{CASES}::test_planted_again"]
    run, doc, outcomes = _run([CASES], tmp_path, "twice", plant=planted)
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout[-3000:] + run.stderr[-2000:]
    for name in ("test_planted_here", "test_planted_again"):
        outcome, message = outcomes.pop(name)
        assert outcome == "failed" and STICKY in message
    assert {n: o for n, (o, _) in outcomes.items() if n in EXPECTED} == {
        n: o for n, o in EXPECTED.items() if n not in ("test_planted_here", "test_planted_again")
    }
    # first process, first worker, the worker's own worker
    assert [b["name"] for b in doc["benchmarks"]] == [
        "test_bench_first",
        "test_bench_second",
        "test_bench_third",
    ]
    assert [h["after"] for h in doc["suite"]["isolation"]] == planted


@pytest.mark.integration
def test_worker_killed_mid_test_fails_that_test_and_the_rest_still_run(tmp_path):
    marker = tmp_path / "die-once"
    marker.touch()
    _, doc, outcomes = _run(
        [CASES],
        tmp_path,
        "killed",
        plant=[f"{CASES}::test_planted_here"],
        env={"ISOLATION_CASES_DIE_ONCE": str(marker)},
    )
    outcome, message = outcomes.pop("test_dies_hard")
    assert outcome == "failed" and "exited with status 3 while running this test" in message, message
    assert outcomes.pop("test_planted_here")[0] == "failed"
    assert {n: o for n, (o, _) in outcomes.items() if n in EXPECTED} == {
        n: o for n, o in EXPECTED.items() if n not in ("test_planted_here", "test_dies_hard")
    }
    assert [b["name"] for b in doc["benchmarks"]] == [
        "test_bench_first",
        "test_bench_second",
        "test_bench_third",
    ]
    assert doc["suite"]["isolation"][0]["workers"] == 2


@pytest.mark.integration
def test_without_isolation_the_planted_error_takes_every_later_test_down(tmp_path):
    """The simulation behaves like a dead context (the H100's 186 failures after one assert), so
    the tests above would go red if the isolation did not work."""
    _, doc, outcomes = _run(
        [CASES, "--no-isolation"], tmp_path, "cascade", plant=[f"{CASES}::test_planted_here"]
    )
    names = list(EXPECTED)
    later = names[names.index("test_planted_here") :]
    assert all(outcomes[n][0] == "failed" and STICKY in outcomes[n][1] for n in later), outcomes
    assert [b["name"] for b in doc["benchmarks"]] == ["test_bench_first"]
    assert "isolation" not in doc["suite"]


@pytest.mark.integration
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_real_device_side_assert_is_isolated(tmp_path):
    _, _, alone_outcomes = _run([CASES, "-k", "cuda and not device_side_assert"], tmp_path, "alone")
    run, doc, outcomes = _run([CASES, "-k", "cuda"], tmp_path, "assert")
    outcome, message = outcomes.pop("test_cuda_device_side_assert")
    assert outcome == "failed" and "device-side assert triggered" in message, message
    assert outcomes == alone_outcomes  # the CUDA tests after the assert pass, on a fresh context
    assert [b["name"] for b in doc["benchmarks"]] == ["test_cuda_bench_before", "test_cuda_bench_after"]
    assert "index out of bounds" in run.stdout  # the kernel's assert, kept with the failed test
    assert doc["suite"]["isolation"][0]["after"] == f"{CASES}::test_cuda_device_side_assert"


@pytest.mark.integration
def test_interrupt_while_a_worker_runs_keeps_the_points_of_both(tmp_path):
    """SIGINT reaches the first process (the worker has a session of its own); it passes it on
    once, takes in what the worker finished, and writes the one JSON, marked partial."""
    out, ready = tmp_path / "bench.json", tmp_path / "stuck"
    env = {k: v for k, v in os.environ.items() if k != isolation.PLANT_ENV}
    env.update({isolation.PLANT_ENV: f"{CASES}::test_planted_here", "INTERRUPT_CASES_READY": str(ready)})
    proc = subprocess.Popen(
        [
            *INTERRUPTIBLE_PYTEST,
            "-p",
            "no:cacheprovider",
            "-q",
            CASES,
            "tests/data/interrupt_cases.py",
            *QUICK,
            f"--benchmark-json={out}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
    doc = json.loads(out.read_text())
    assert [b["name"] for b in doc["benchmarks"]] == [
        "test_bench_first",
        "test_bench_second",
        "test_bench_third",
        "test_bench_one",
        "test_bench_two",
    ]
    assert doc["suite"]["partial"] is True
    assert doc["suite"]["partial_reason"].startswith(
        "SIGINT (KeyboardInterrupt) while tests/data/interrupt_cases.py::test_bench_stuck was running"
    )
    assert doc["suite"]["isolation"][0]["after"] == f"{CASES}::test_planted_here"
