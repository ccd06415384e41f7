"""Every documented option and entry point, each run on a real selection (not only collected):
the options table (docs/options.md), the GPU command, and the tox environments' install step."""

import re
import subprocess

import pytest
import torch

from tests import paths
from tests.launcher import PYTEST

ROOT = paths.ROOT
HAS_CUDA = torch.cuda.is_available()


def _pytest(*args):
    run = subprocess.run(
        [*PYTEST, "suite", "-q", "-rs", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|error)", last)}
    return run, counts


QUICK_BENCH = ("--benchmark-max-time=0.005", "--benchmark-min-rounds=1", "--benchmark-warmup=off")

# (options, what must have run): a device's tests pass where it exists and skip with the reason
# where it does not; each combination is a real run of a cheap selection.
COMBINATIONS = {
    "device-cpu": (["--device", "cpu", "-k", "onehot.encode", "--benchmark-disable"], {"cpu"}),
    "device-cuda": (["--device", "cuda", "-k", "onehot.encode", "--benchmark-disable"], {"cuda"}),
    "device-both": (["--device", "cpu,cuda", "-k", "onehot.encode", "--benchmark-disable"], {"cpu", "cuda"}),
    "marker-not-slow": (
        ["--device", "cpu", "-m", "not slow", "-k", "broadcast.rules", "--benchmark-disable"],
        {"cpu"},
    ),
    "profile-full": (
        ["--device", "cpu", "--profile", "full", "-k", "broadcast.outer and r32-", "--benchmark-disable"],
        {"cpu"},
    ),
    "timing-mode-all": (
        [
            "--device",
            "cpu,cuda",
            "--timing-mode",
            "all",
            "-k",
            "distance.pairwise and n256",
            "--benchmark-only",
            *QUICK_BENCH,
        ],
        {"cpu", "cuda"},
    ),
    "timing-mode-graph-threads": (
        [
            "--device",
            "cpu",
            "--timing-mode",
            "cold_l2,graph",
            "--threads",
            "1",
            "--seed",
            "3",
            "-k",
            "broadcast.outer",
            *QUICK_BENCH,
        ],
        {"cpu"},
    ),
    "gpu-command": (
        ["-m", "gpu", "--benchmark-only", "-k", "data.recordio or onehot.encode", *QUICK_BENCH],
        {"cpu", "cuda"} if HAS_CUDA else {"cpu"},  # --device defaults to the devices present
    ),
    "shard": (["--device", "cpu", "-k", "onehot.encode", "--benchmark-disable", "--shard", "1/2"], {"cpu"}),
    "device-default": (
        ["-k", "onehot.encode", "--benchmark-disable"],
        {"cpu", "cuda"} if HAS_CUDA else {"cpu"},
    ),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(COMBINATIONS))
def test_option_combination_runs_a_real_selection(name):
    args, devices = COMBINATIONS[name]
    run, counts = _pytest(*args)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0
    ran_here = {d for d in devices if d == "cpu" or HAS_CUDA}
    if ran_here:
        assert counts.get("passed", 0) > 0, f"{name}: nothing ran ({counts})"
    if "cuda" in devices and not HAS_CUDA:
        assert "CUDA not available" in run.stdout, f"{name}: CUDA tests did not skip with the reason"
    if name in ("device-cpu", "device-default") and not HAS_CUDA:
        assert "CUDA not available" not in run.stdout, "no CUDA point is even collected where there is none"
    if name == "profile-full":
        assert "r32" in run.stdout or counts["passed"] >= 2


@pytest.mark.integration
def test_gpu_command_gives_cpu_only_techniques_and_rule_checks_a_run():
    """`-m gpu --benchmark-only`: the rule checks run (their findings are the Tier-3 verdicts) and a
    technique with no CUDA test (data.recordio) runs on the host CPU, so every ID gets a verdict."""
    run, counts = _pytest("-m", "gpu", "--benchmark-only", "-k", "data.recordio", *QUICK_BENCH, "-vv")
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(r"test_rule\[data\.recordio-\S+ PASSED", run.stdout), run.stdout[-3000:]
    assert re.search(r"test_benchmark\[data\.recordio-\S+ PASSED", run.stdout)
    # the variant checks: each is left to its variant's benchmark, which checks it first
    assert re.search(r"\d+ test_check deselected: each variant's test_benchmark checks it", run.stdout)
    assert "test_check[" not in run.stdout, run.stdout[-3000:]


@pytest.mark.integration
def test_with_every_benchmark_skipped_the_variants_are_still_checked():
    """--benchmark-skip: pytest-benchmark skips each test_benchmark, so no check is left to one."""
    run, _ = _pytest("-k", "onehot.encode", "--benchmark-skip", "-vv")
    assert run.returncode == 0, run.stdout[-3000:]
    assert re.search(r"test_check\[onehot\.encode-\S+ PASSED", run.stdout), run.stdout[-3000:]
    assert "test_check deselected" not in run.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--threads", "100000"], "--threads 100000: use 1 to"),  # torch segfaulted on it
        (["--threads", "0"], "--threads 0: use 1 to"),
        (["--seed", "12345678901234567890123"], "--seed 12345678901234567890123: use an integer from 0"),
        (["--seed", "-1"], "--seed -1: use an integer from 0"),
        (["--device", "gpu"], "--device 'gpu': use a comma-separated list of cpu, cuda"),
    ],
)
@pytest.mark.integration
def test_out_of_range_options_stop_with_a_usage_error(args, message):
    run, _ = _pytest(*args, "-k", "onehot.encode", "--benchmark-disable")
    assert run.returncode == 4 and message in run.stderr, run.stderr[-2000:]


@pytest.mark.integration
def test_a_device_named_twice_runs_once():
    run, counts = _pytest("--device", "cpu,cpu", "-k", "onehot.encode and test_check", "--benchmark-disable")
    once, _ = _pytest("--device", "cpu", "-k", "onehot.encode and test_check", "--benchmark-disable")
    assert run.returncode == 0 and counts["passed"] == int(re.findall(r"(\d+) passed", once.stdout)[-1])
