"""How the distributed tests are launched (harness/run/launch.py): the world sizes come from
SUITE_WORLD_SIZES, else from the hardware; a port is handed out once; a launched command dies with
the process that launched it."""

import os
import subprocess
import sys
import time

import pytest

from harness.host import processes
from harness.run import launch

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def test_world_sizes_come_from_the_environment_else_the_hardware(monkeypatch):
    from harness.run.launch import world_sizes

    monkeypatch.delenv("SUITE_WORLD_SIZES", raising=False)
    assert world_sizes("cpu") == [1, 2, 4]
    monkeypatch.setenv("SUITE_WORLD_SIZES", "2, 8")
    assert world_sizes("cpu") == world_sizes("cuda") == [2, 8]


def test_a_port_handed_out_is_not_handed_out_again_while_its_launch_may_still_bind_it(monkeypatch):
    """The kernel may give the port of a probe just closed to the next probe (two launches at once
    then met in one rendezvous): free_port skips any port it gave out in the last HOLD_S."""
    monkeypatch.setattr(launch, "_HANDED_OUT", {})
    kernel = iter([5001, 5001, 5001, 5002])
    monkeypatch.setattr(launch, "_kernel_port", lambda host: next(kernel))
    assert [launch.free_port(), launch.free_port()] == [5001, 5002]
    monkeypatch.setattr(launch, "port_is_free", lambda port, host="127.0.0.1": True)
    monkeypatch.setattr(launch, "_kernel_port", lambda host: 5003)
    assert launch.free_port(preferred=5001) == 5003  # the preferred port was handed out already
    assert launch.free_port(preferred=6000) == 6000
    with pytest.raises(OSError, match="handed out already"):
        launch.free_port()  # the kernel offers only 5003 again


def test_ports_handed_out_long_ago_can_be_handed_out_again(monkeypatch):
    monkeypatch.setattr(launch, "_HANDED_OUT", {5001: launch.time.monotonic() - launch.HOLD_S - 1})
    monkeypatch.setattr(launch, "_kernel_port", lambda host: 5001)
    assert launch.free_port() == 5001


@linux
def test_a_command_started_dying_with_this_process_is_that_command():
    """The wrapper execs the command: its PID, arguments and exit status are the command's."""
    probe = "import os, sys; print(os.getpid(), sys.argv[1:]); sys.exit(7)"
    cmd = launch.dying_with_this_process([sys.executable, "-c", probe, "a b", "c"])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 7 and out.split(maxsplit=1) == [str(proc.pid), "['a b', 'c']\n"]


@linux
def test_a_command_started_dying_with_this_process_dies_with_it():
    """A launcher killed outright (nothing of it runs any more) takes the command with it; a
    command whose launcher was gone before it asked is not run."""
    launcher = (
        "import subprocess, sys, time\n"
        "from harness.run import launch\n"
        "child = subprocess.Popen(launch.dying_with_this_process(['sleep', '60']), start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())

    def running() -> bool:  # a zombie has died, only its reaping is left to whoever adopted it
        p = processes.read(child)
        return p is not None and p.state != "Z"

    assert running()
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    gone = not running()
    if not gone:
        os.kill(child, 9)
    assert gone, "the command outlived its launcher"
    orphan = [sys.executable, "-S", "-c", launch._EXEC_DYING_WITH_PARENT, "1", "echo", "ran"]
    done = subprocess.run(orphan, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stdout == ""
