"""cases/_launch/dist_worker.py: its command line, and a task run as one gloo rank in this process
(the several-rank launches are suite/test_distributed.py's): the rank writes whole JSON files named
by task and rank, and leaves no process group behind."""

from __future__ import annotations

import argparse
import json
import tempfile

import pytest
import torch.distributed as dist

from cases._launch import dist_worker
from cases._lib import collectives
from harness.run import launch


def test_each_task_takes_its_own_options():
    fault = dist_worker.parse(["fault", "--kind", "raise", "--out", "o"])
    assert (fault.task, fault.kind, fault.bad_rank, fault.device) == ("fault", "raise", 1, "cpu")
    reduce = dist_worker.parse(["allreduce", "--out", "o"])
    assert reduce.algorithms.split(",") == list(collectives.ALLREDUCE)
    assert set(dist_worker.TASKS) == {"train", "allreduce", "equivalence", "setup", "spawn", "fault"}
    with pytest.raises(SystemExit):
        dist_worker.parse(["fault", "--kind", "explode", "--out", "o"])
    with pytest.raises(SystemExit):
        dist_worker.parse(["train"])  # --out is required: a rank must have somewhere to answer


@pytest.fixture
def one_rank(monkeypatch):
    for name, value in {
        "MASTER_ADDR": "127.0.0.1",
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MASTER_PORT", str(launch.free_port()))
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_a_healthy_fault_run_of_one_rank_reports_its_start_and_its_sum(one_rank, tmp_path):
    dist_worker.task_fault(argparse.Namespace(out=str(tmp_path), device="cpu", kind="none", bad_rank=1))
    started = json.loads((tmp_path / "fault_started-rank0.json").read_text())
    done = json.loads((tmp_path / "fault-rank0.json").read_text())
    assert started["task"] == "fault_started" and started["rank"] == 0 and started["pid"] > 0
    assert done == {"task": "fault", "rank": 0, "sum": 1.0}
    assert not dist.is_initialized() and not list(tmp_path.glob("*.tmp"))


def test_the_notes_main_checks_what_spawn_handed_it():
    dist_worker.notes_main(1, 2)
    with pytest.raises(AssertionError):
        dist_worker.notes_main(2, 2)


def test_temp_files_go_to_the_folder_given_inside_the_block_only(tmp_path):
    before = tempfile.tempdir
    with dist_worker.temp_files_in(tmp_path):
        assert tempfile.gettempdir() == str(tmp_path)
    assert tempfile.tempdir == before
