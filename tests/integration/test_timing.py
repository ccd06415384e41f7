"""The replay clock on a real pytest-benchmark run (harness.measure.timing.ReplayClock): measured steps
handed to pytest-benchmark exactly."""

import json
import os
import subprocess

import pytest

from tests import paths
from tests.launcher import PYTEST

ROOT = paths.ROOT


REPLAYED_TEST = """
import pytest
from harness.measure.timing import ReplayClock

STEPS = [0.1, 0.2, 0.3, 1e-9]


@pytest.mark.benchmark(timer=ReplayClock())
def test_steps(benchmark, request):
    clock = request.node.get_closest_marker("benchmark").kwargs["timer"]
    clock.load(STEPS)
    benchmark.pedantic(clock.advance, setup=clock.rewind, rounds=len(STEPS), iterations=1)
"""


@pytest.mark.integration
def test_replay_clock_hands_measured_steps_to_pytest_benchmark_exactly(tmp_path):
    """Through pytest-benchmark's public per-test timer (the `benchmark` marker), each round's time
    is the loaded step to the bit: (0.1 + 0.2) - 0.1 would be 0.20000000000000004."""
    (tmp_path / "test_replayed.py").write_text(REPLAYED_TEST)
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [
            *PYTEST,
            "-q",
            "test_replayed.py",
            f"--benchmark-json={out}",
            "--benchmark-save-data",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (row,) = json.loads(out.read_text())["benchmarks"]
    assert row["stats"]["data"] == [0.1, 0.2, 0.3, 1e-9]
    assert row["options"]["timer"] == "harness.measure.timing.ReplayClock"
