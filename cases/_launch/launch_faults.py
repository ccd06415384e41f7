"""The launcher's guarantees, which every distributed judgement relies on, shown on launches of
`cases._launch.dist_worker fault` (two ranks meeting in one all-reduce): a busy preferred port is
replaced by a free one; a rank that raises ends the launch at once, with its traceback in the
message; a rank that hangs is killed at the timeout. Every process the launch started is gone
afterwards. Each scenario raises AssertionError with what it saw when a guarantee broke.
"""

from __future__ import annotations

import socket
from pathlib import Path

from cases._launch.dist_launches import Runs
from harness.run import launch


def port_in_use(runs: Runs, out_dir: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        taken = busy.getsockname()[1]
        assert not launch.port_is_free(taken), f"port {taken} is bound, yet reads as free"
        run = runs.fault("none", out_dir, port=taken)
    finally:
        busy.close()
    run.require_ok("launch with a busy preferred port")
    assert run.port != taken, f"the launch kept the busy port {taken}"
    sums = [r["sum"] for r in run.results("fault-")]
    assert sums == [2.0, 2.0], f"the ranks' all-reduce gave {sums}, expected [2.0, 2.0]"


def raising_rank(runs: Runs, out_dir: Path) -> None:
    run = runs.fault("raise", out_dir, timeout_s=30)
    assert not run.timed_out, f"a raising rank should end the launch, not hang it: {run.describe()}"
    assert run.wall_s < 30, f"a raising rank ended the launch only after {run.wall_s:.1f} s"
    assert not run.ok, "a launch with a raising rank reads as ok"
    message = _failure(run)
    assert "injected fault on rank 1" in message and "Traceback" in message, message[-3000:]
    assert len(run.results("fault_started")) == 2, "both ranks should have started"
    assert len(run.tracked) >= 3, f"torchrun and its 2 ranks should have been tracked, saw {run.tracked}"
    assert run.survivors() == [], f"left behind: {run.survivors()}"


def hanging_rank(runs: Runs, out_dir: Path) -> None:
    timeout = 15.0  # both ranks reach the collective in ~5 s on the 2-core CI machine: 3x that
    run = runs.fault("hang", out_dir, timeout_s=timeout)
    assert run.timed_out, f"a hanging rank did not time the launch out: {run.describe()}"
    assert run.wall_s < timeout + launch.GRACE_S + 5, f"killed only after {run.wall_s:.1f} s"
    assert "timed out" in _failure(run)
    started = run.results("fault_started")
    assert len(started) == 2, (
        f"both ranks should have reached the collective before the timeout: {run.output[-2000:]}"
    )
    pids = {r["pid"] for r in started}
    assert pids <= set(run.tracked), "the ranks' PIDs were not tracked"
    assert run.survivors() == [], f"left behind: {run.survivors()}"
    assert not run.results("fault-"), "a rank finished the collective although one rank hung"


def _failure(run: launch.Launch) -> str:
    """The message `require_ok` gives a launch that must have failed."""
    try:
        run.require_ok("fault")
    except launch.LaunchFailed as failure:
        return str(failure)
    raise AssertionError(f"a failed launch passed require_ok: {run.describe()}")
