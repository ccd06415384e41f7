"""harness.host.processes: /proc's process table read, whatever a process is called, and a tree
followed from its roots."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.host import processes

linux = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")


def _stat_text(name: str, state="S", parent=41, cpu=(300, 200, 50, 25), start=987654) -> str:
    # fields from the state (3) on: state, ppid, 9 more, utime stime cutime cstime (14-17), 4 more,
    # starttime (22), the rest
    fields = [state, str(parent)] + ["0"] * 9 + [str(c) for c in cpu] + ["0"] * 4 + [str(start)] + ["0"] * 30
    return f"4242 ({name}) " + " ".join(fields)


def test_a_stat_line_gives_parent_state_start_and_cpu_whatever_the_name():
    for name in ("python", "python (worker) 1", "a) b (c", ") )"):
        p = processes.parse_stat(_stat_text(name))
        assert (p.parent, p.state, p.start_ticks) == (41, "S", 987654), name
        assert p.cpu_s == pytest.approx(575 * processes.TICK_S)


def test_below_follows_the_tree_from_its_roots_and_leaves_the_rest():
    procs = {
        pid: processes.Process(parent, "S", pid, 0.0)
        for pid, parent in {1: 0, 10: 1, 11: 10, 12: 11, 13: 11, 20: 1, 21: 20}.items()
    }
    assert processes.below({10}, procs) == {11, 12, 13}
    assert processes.below({11, 20}, procs) == {12, 13, 21}
    assert processes.below({99}, procs) == set()


@linux
def test_the_table_holds_this_process_and_a_live_child_below_it():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        procs = processes.table()
        assert procs[os.getpid()].parent == os.getppid()
        assert child.pid in processes.below({os.getpid()}, procs)
        assert processes.read(child.pid).start_ticks >= procs[os.getpid()].start_ticks
    finally:
        child.kill()
        child.wait()
    assert processes.read(child.pid) is None  # reaped: gone from /proc


@linux
def test_threads_lists_this_process_threads_and_a_sleeping_one_is_not_running():
    import threading
    import time

    stop = threading.Event()
    sleeper = threading.Thread(target=stop.wait, daemon=True)
    sleeper.start()
    try:
        found = processes.threads()
        assert threading.get_native_id() in found and sleeper.native_id in found
        assert found[threading.get_native_id()].state == "R"  # reading its own stat, it runs
        # Just started, it may not have reached its wait yet.
        deadline = time.monotonic() + 5
        while processes.threads()[sleeper.native_id].state != "S" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert processes.threads()[sleeper.native_id].state == "S"
    finally:
        stop.set()
        sleeper.join()


def test_threads_of_a_process_that_is_gone_is_empty():
    assert processes.threads(2**22 + 7) == {}
