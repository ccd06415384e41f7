"""The suite's collection seen from a real pytest run: a bad option is a usage error naming the valid
values, every node ID carries its catalogue ID, GPU-only benchmarks skip with the reason on a CPU
machine."""

import subprocess

import pytest
import torch

from cases import all_cases
from tests import paths
from tests.launcher import PYTEST

ROOT = paths.ROOT


def _pytest(*args):
    return subprocess.run(
        [*PYTEST, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "option, valid",
    [
        ("--device=tpu", "cpu, cuda"),
        ("--profile=huge", "'quick', 'full'"),
        ("--threads=0", "use 1 to"),
    ],
)
@pytest.mark.integration
def test_bad_option_is_a_usage_error_naming_the_valid_values(option, valid):
    run = _pytest("suite", "--collect-only", "-q", option)
    assert run.returncode == 4, run.stdout + run.stderr  # pytest's exit code for usage errors
    assert valid in run.stderr


@pytest.mark.integration
def test_every_suite_node_id_carries_its_catalogue_id():
    run = _pytest("suite", "--collect-only", "-q", "--benchmark-disable", "--device", "cpu,cuda")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    ids = {c.id for c in all_cases()}
    nodes = [line for line in run.stdout.splitlines() if "::" in line]
    assert len(nodes) > 100

    def carries(node, cid):
        return f"[{cid}-" in node or f"[{cid}]" in node

    for node in nodes:
        assert any(carries(node, cid) for cid in ids), f"no catalogue ID in {node}"
    assert ids == {cid for cid in ids for node in nodes if carries(node, cid)}, "a case has no test"


@pytest.mark.integration
def test_gpu_only_benchmarks_skip_with_the_reason_on_a_cpu_machine():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    run = _pytest("suite", "-m", "gpu", "--benchmark-only", "-q", "-k", "distance.pairwise", "-rs")
    assert run.returncode in (0, 5), run.stdout[-3000:]  # 5: nothing selected, as it should be
    assert " passed" not in run.stdout.splitlines()[-1], (
        "distance.pairwise has CUDA tests: none runs on the host"
    )
    named = _pytest(
        "suite", "-m", "gpu", "--benchmark-only", "-q", "-k", "distance.pairwise", "-rs", "--device", "cuda"
    )
    assert "CUDA not available" in named.stdout, "a device named but absent is skipped with the reason"
