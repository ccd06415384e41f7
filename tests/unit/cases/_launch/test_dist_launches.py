"""cases/_launch/dist_launches.py: the message sizes and training sizes a profile launches, each
launch made once per session with the worker module that exists, and what a launched point
records for pytest."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cases._launch import dist_launches
from cases._launch.dist_launches import LaunchRecord, Runs
from harness.contract.claims import Finding, Verdict


def test_the_message_sizes_reach_both_ends_of_the_cost_model():
    assert dist_launches.allreduce_message_sizes("quick", "cpu") == [1 << k for k in (10, 14, 18, 22, 26)]
    assert dist_launches.allreduce_message_sizes("full", "cpu")[-1] == 1 << 26
    assert dist_launches.allreduce_message_sizes("full", "cuda")[-1] == 1 << 28


def test_the_training_arguments_are_the_profiles_sizes():
    assert dist_launches.train_args("quick") == ["--width", "1024", "--batch", "64", "--steps", "5"]


@pytest.mark.parametrize("module", [dist_launches.WORKER, "cases._launch.dist_launch_worker"])
def test_the_modules_launched_by_name_exist(module):
    # torchrun and mp.spawn name them by string: a move that forgets one fails here, not in a launch.
    assert importlib.util.find_spec(module) is not None


def test_a_shared_launch_is_made_once_per_session(monkeypatch, tmp_path):
    calls = []

    def torchrun(module, args, **kw):
        calls.append((module, args, kw["nproc"], kw["out_dir"]))
        return f"launch {len(calls)}"

    monkeypatch.setattr(dist_launches.launch, "torchrun", torchrun)
    runs = Runs(tmp_path, "quick")
    first = runs.train("cpu", 4, nnodes=2)
    assert runs.train("cpu", 4, nnodes=2) == first and len(calls) == 1
    module, args, nproc, out = calls[0]
    assert (module, args[:3], nproc) == (dist_launches.WORKER, ["train", "--device", "cpu"], 2)
    assert Path(out) == tmp_path / "train-cpu-w4-n2"
    runs.allreduce("cpu", 2)
    runs.allreduce("cpu", 2)
    runs.fault("raise", tmp_path / "f")
    runs.fault("raise", tmp_path / "f")  # a fault scenario is never shared
    assert [c[1][0] for c in calls] == ["train", "allreduce", "fault", "fault"]


def test_a_launch_record_gives_its_finding_and_measured_figures_to_its_point():
    finding = Finding(Verdict.HOLDS, "ranks agree")
    record = LaunchRecord(check="ddp_scaling-w2", finding=finding, measured={"speedup": 1.5})
    props = record.properties({"id": "parallel.dp_vs_ddp"})
    assert props[0] == ("point", {"id": "parallel.dp_vs_ddp", "check": "ddp_scaling-w2"})
    assert props[1] == ("finding", finding.to_data()) and props[2] == ("measured", {"speedup": 1.5})
    assert LaunchRecord().properties({"id": "x"}) == []
