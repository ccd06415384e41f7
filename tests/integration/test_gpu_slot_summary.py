""".ci/gpu_slot_summary.py, the last step of a GPU slot: the answer in at most 40 lines from the slot's
files, shown here with a headline run of one pair timed on the fake CUDA device (a host-bound fast
side) and the timer probe's fake run; a missing file is a line, not a traceback. And the headline
step's selection priced by plan.estimate for a 139 GiB GPU within its step."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import pytest

from harness.measure import device as harness_device
from harness.point import pair_benchmark
from tests import fake_gpu, paths, synthetic
from tests.fake_device import FakeDevice

pytestmark = pytest.mark.integration
CI = paths.ROOT / ".ci"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=paths.ROOT
    )


def test_the_summary_shows_each_pair_its_gpu_only_speedup_the_host_bound_flag_and_the_probe(tmp_path):
    fake = FakeDevice(launch_latency=20e-6)
    with harness_device.installed(fake):
        timed = pair_benchmark.run(
            fake_gpu.host_bound_pair(fake), cap_s=0.05, min_rounds=5, noise_floor=lambda: None
        )
    doc = synthetic.result(devices=("cuda",), paired=True)
    doc["benchmarks"], doc["pairs"] = [], [timed.to_data()]
    (tmp_path / "headline.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert (
        _run(str(CI / "gpu_timer_probe.py"), "--fake", "--json", str(tmp_path / "probe.json")).returncode == 0
    )
    run = _run(str(CI / "gpu_slot_summary.py"), str(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) <= 40
    pair = next(line for line in lines if "distance.pairwise matmul/broadcast n1024" in line)
    assert re.search(r": 2\d\.\dx \[.*\]; graph 4[67](\.\d)?x  HOST-BOUND$", pair), pair
    assert any(line.startswith("  distance n1024: 2") and "/ 46.9x / -" in line for line in lines), lines
    assert any("in-window gap (k-call fit): 2" in line for line in lines), lines


def test_a_slot_whose_files_are_missing_gets_one_line_each(tmp_path):
    run = _run(str(CI / "gpu_slot_summary.py"), str(tmp_path))
    assert (
        run.returncode == 0
        and "no headline.json.gz or quick.json.gz" in run.stdout
        and "no probe.json" in run.stdout
    )


def test_the_headline_step_is_priced_within_its_limit_on_a_139_gib_gpu():
    run = subprocess.run(
        ["bash", str(CI / "gpu-reference"), "--estimate", "headline:130"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=paths.ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    minutes = float(re.search(r"headline\s+limit\s+130 s\s+estimate: ([\d.]+) min", run.stdout).group(1))
    assert minutes * 60 < 100, run.stdout  # the step's --time-budget: its limit less 30 s
