"""cases/_launch/launch_faults.py on hand-made launches: each scenario passes a launch that kept
the launcher's guarantee and raises, saying what it saw, on one that broke it. The real launches
run in suite/test_distributed.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cases._launch import launch_faults
from harness.run.launch import Launch

GONE = 2**22 + 7  # above Linux's largest PID: a tracked process that is certainly gone


def _launch(
    out: Path, *, codes=(0,), timed_out=False, wall_s=2.0, logs=("",), port=29500, ranks=()
) -> Launch:
    out.mkdir(parents=True, exist_ok=True)
    for name, rank, row in ranks:
        (out / f"{name}-rank{rank}.json").write_text(json.dumps({"rank": rank, **row}))
    tracked = {GONE + i: 0 for i in range(3)}
    return Launch([["torchrun"]], list(codes), timed_out, wall_s, out, list(logs), port, tracked)


class FakeRuns:
    def __init__(self, make):
        self.make, self.asked = make, []

    def fault(self, kind, out_dir, *, timeout_s=180.0, port=None):
        self.asked.append((kind, timeout_s, port))
        return self.make(out_dir, port)


STARTED = [("fault_started", r, {"pid": GONE + r}) for r in (0, 1)]


def test_a_raising_rank_that_ends_the_launch_with_its_traceback_passes(tmp_path):
    runs = FakeRuns(
        lambda out, port: _launch(
            out,
            codes=(1,),
            logs=("Traceback (most recent call last):\nRuntimeError: injected fault on rank 1",),
            ranks=STARTED,
        )
    )
    launch_faults.raising_rank(runs, tmp_path)
    assert runs.asked == [("raise", 30, None)]


def test_a_raising_rank_that_hangs_the_launch_fails(tmp_path):
    runs = FakeRuns(lambda out, port: _launch(out, codes=(None,), timed_out=True, wall_s=30.0, ranks=STARTED))
    with pytest.raises(AssertionError, match="should end the launch, not hang it"):
        launch_faults.raising_rank(runs, tmp_path)


def test_a_launch_that_keeps_the_busy_port_fails(tmp_path):
    sums = [("fault", r, {"sum": 2.0}) for r in (0, 1)]
    with pytest.raises(AssertionError, match="kept the busy port"):
        launch_faults.port_in_use(FakeRuns(lambda out, port: _launch(out, port=port, ranks=sums)), tmp_path)
    launch_faults.port_in_use(FakeRuns(lambda out, port: _launch(out, port=port + 1, ranks=sums)), tmp_path)


def test_a_hanging_rank_must_time_the_launch_out(tmp_path):
    runs = FakeRuns(lambda out, port: _launch(out, codes=(0,), ranks=STARTED))
    with pytest.raises(AssertionError, match="did not time the launch out"):
        launch_faults.hanging_rank(runs, tmp_path)


def test_a_failure_message_is_asked_only_of_a_failed_launch(tmp_path):
    assert "timed out" in launch_faults._failure(_launch(tmp_path, codes=(None,), timed_out=True))
    with pytest.raises(AssertionError, match="passed require_ok"):
        launch_faults._failure(_launch(tmp_path))
