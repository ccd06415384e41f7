"""The run-time estimate on real selections (suite.estimate over plan.estimate and plan.costmodel):
it runs on the plan of a real selection, and a bad reference from the command line ends without a
traceback."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from tests import paths

ROOT = paths.ROOT


def _estimate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "suite.estimate", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.integration
def test_estimate_runs_on_the_plan_of_a_real_selection(tmp_path):
    reference = tmp_path / "points.csv"
    with open(reference, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "median_s", "spread"])
        writer.writerow(["distance.pairwise-broadcast-n1024-m1024-d256-float32-cpu", "0.02", "0.01"])
    run = _estimate(
        "--reference",
        str(reference),
        "--",
        "--device",
        "cpu",
        "--benchmark-only",
        "-k",
        "distance.pairwise and n1024 and not compiled",
    )
    assert run.returncode == 0, run.stderr
    header = run.stdout.splitlines()[0].split()
    assert header[:4] == ["case", "points", "no-ref", "skipped"] and "(s)" in header  # counts, then seconds
    row = next(line for line in run.stdout.splitlines() if line.startswith("distance.pairwise"))
    points, scaled = map(int, row.split()[1:3])
    assert points >= 4 and scaled == points - 1  # the other variants scaled or defaulted
    assert "estimate:" in run.stdout


@pytest.mark.integration
def test_without_a_reference_the_ci_machines_run_prices_the_calls_and_is_named():
    """With none, every call was priced at --default-call-s (1 ms): 9 s of a quick CPU run's
    calls, for 70 s measured."""
    run = _estimate("--gpus", "0", "--", "--device", "cpu", "-k", "distance.pairwise")
    assert run.returncode == 0, run.stderr
    assert (
        "reference: reports/reference/cpu-xeon-amx-2026-11-23/quick-compiled-all.json.gz (the default"
        in run.stdout
    )
    row = next(line for line in run.stdout.splitlines() if line.startswith("distance.pairwise"))
    points, unreferenced = map(int, row.split()[1:3])
    assert points >= 10 and unreferenced == 0


@pytest.mark.integration
def test_a_bad_reference_from_the_command_line_has_no_traceback(tmp_path):
    path = tmp_path / "ref.json.gz"
    path.write_bytes(b"\x1f\x8b not really gzip")
    result = _estimate("--reference", str(path))
    assert result.returncode == 2, result.stderr
    assert str(path) in result.stderr and "Traceback" not in result.stderr, result.stderr
