""".ci/gpu_timer_probe.py's CPU path, as CI runs it: the probe on the fake CUDA device (a 20 µs launch
latency, kernels modelled on an H100) prints its one table and writes its rows, and each clock
reads what the model says it must: the warm rounds within 2% of max(host issue, GPU time) per
call, the fit's intercept the launch gap, the graph replay the GPU's time, a cold-L2 round (one
call after a reading) one gap more than a warm call. Without CUDA and without --fake it stops in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests import paths

PROBE = paths.ROOT / ".ci" / "gpu_timer_probe.py"
pytestmark = pytest.mark.integration


def _probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(PROBE), *args], capture_output=True, text=True, timeout=120, cwd=paths.ROOT
    )


def test_the_probe_runs_on_the_fake_device_and_prints_one_table(tmp_path):
    out = tmp_path / "probe.json"
    run = _probe("--fake", "--json", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads(out.read_text())
    model = {name: (m["launches"], m["kernel_s"], m["host_s"]) for name, m in doc["model"].items()}
    rows = {row["workload"]: row for row in doc["rows"]}
    assert set(rows) == set(model)
    for name, (launches, kernel_s, host_s) in model.items():
        row, gpu_s = rows[name], launches * kernel_s
        assert name in run.stdout
        assert row["warm_s"] == pytest.approx(max(gpu_s, launches * host_s), rel=0.02), name
        assert row["graph_s"] == pytest.approx(gpu_s, rel=0.015), name  # one gap a ≥ 2 ms round
        # In the window besides the calls: the latency, and the first call's issue where the GPU
        # sets the pace, the last kernel where the host does.
        gap = 20e-6 + (host_s if gpu_s >= launches * host_s else kernel_s)
        if row["gap_s"] is not None:  # a call too long for two rounds in the fit's window has none
            assert row["gap_s"] == pytest.approx(gap, rel=0.05), name
        assert row["cold_s"] == pytest.approx(row["warm_s"] + gap, rel=0.02), name
    host_bound = {name for name, row in rows.items() if row["warm_s"] > 1.3 * row["graph_s"]}
    assert host_bound == {"add 8 MiB", "distance.matmul n1024"}
    assert "distance n1024: broadcast ÷ matmul" in run.stdout and "46.9" in run.stdout


def test_without_cuda_the_probe_says_so_in_one_line():
    run = _probe()
    assert run.returncode == 3 and run.stdout == ""
    assert run.stderr.strip() == (
        "gpu_timer_probe: CUDA is not available to this interpreter; --fake runs the CPU path"
    )
