"""harness.host.load: the readings become one sentence, and the probe sees CPU burners."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from harness.host import load


def test_quiet_readings_give_no_reason():
    assert load.Load(cores=2, loadavg_1m=0.1, pressure_10s=0.5, probe_share=0.99).busy_reason() is None
    assert load.Load(cores=2, loadavg_1m=None, pressure_10s=None, probe_share=None).busy_reason() is None


def test_each_busy_reading_is_named_with_its_figure():
    shared = load.Load(cores=2, loadavg_1m=3.0, pressure_10s=1.0, probe_share=0.6).busy_reason()
    assert shared and "60% of its core" in shared and "load average 3.0" in shared
    waited = load.Load(cores=2, loadavg_1m=None, pressure_10s=40.0, probe_share=0.99).busy_reason()
    assert waited and "40% of the last 10 s" in waited


def _burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_probe_sees_one_burner_per_core():
    """With a burner on every core, each probe spinner gets about half of one (2 runnable tasks per
    core): far below the 90% a quiet core gives, whatever else the machine runs."""
    cores = load.usable_cores()
    ctx = multiprocessing.get_context("fork")
    burners = [ctx.Process(target=_burn, args=(3.0,), daemon=True) for _ in range(cores)]
    for b in burners:
        b.start()
    try:
        time.sleep(0.2)
        share = load.probe_share(0.5, cores)
    finally:
        for b in burners:
            b.terminate()
            b.join()
    assert share < load.MIN_SHARE, f"the probe got {share:.0%} of a core beside {cores} burners"


def test_the_pressure_over_a_window_is_judged_instead_of_the_last_10_s(monkeypatch):
    """A pair timed for 1 s right after 9 s of oversubscribed work: avg10 says busy, its own rounds
    waited for a CPU 2% of their time; and the other way round, a quiet avg10 with busy rounds.
    (Without /proc/stat's busy time, so the pressure over the window is what is judged.)"""
    monkeypatch.setattr(load, "cores_busy_s", lambda cores: None)
    stalls = iter([1_000_000.0, 1_020_000.0])  # µs: 20 ms waited over the window
    monkeypatch.setattr(load, "cpu_stall_us", lambda: next(stalls))
    monkeypatch.setattr(load, "cpu_pressure", lambda: 14.0)
    began = load.Window(wall=load.time.perf_counter() - 1.0, stall_us=next(stalls))
    seen = load.measure(probe_s=0, since=began)
    assert 1.5 < seen.pressure_window < 2.1 and 0.99 < seen.window_s < 1.2
    assert seen.busy_reason() is None and seen.to_data()["cpu_pressure_10s"] == 14.0
    busy = load.Load(
        cores=2, loadavg_1m=1.0, pressure_10s=2.0, probe_share=None, pressure_window=30.0, window_s=1.5
    )
    assert "30% of the 1.5 s measured" in busy.busy_reason()


def test_without_the_kernels_running_total_the_last_10_s_are_judged(monkeypatch):
    monkeypatch.setattr(load, "cpu_stall_us", lambda: None)
    monkeypatch.setattr(load, "cores_busy_s", lambda cores: None)
    monkeypatch.setattr(load, "cpu_pressure", lambda: 14.0)
    seen = load.measure(probe_s=0, since=load.window())
    assert seen.pressure_window is None and "of the last 10 s" in seen.busy_reason()


def _window_over(monkeypatch, *, busy, own, stall_us=(0.0, 400_000.0), cores=2, elapsed=1.0, quota=None):
    """A window of `elapsed` seconds on `cores` cores whose readings at its start and end are the
    given pairs."""
    readings = {"busy": iter(busy), "own": iter(own), "stall": iter(stall_us)}
    monkeypatch.setattr(load, "_affinity", lambda: frozenset(range(cores)))
    monkeypatch.setattr(load, "cores_busy_s", lambda cores: next(readings["busy"]))
    monkeypatch.setattr(load, "own_cpu_s", lambda: next(readings["own"]))
    monkeypatch.setattr(load, "cpu_stall_us", lambda: next(readings["stall"]))
    monkeypatch.setattr(load, "cpu_quota_cores", lambda: quota)
    began = load.window()
    began = load.Window(
        load.time.perf_counter() - elapsed, began.stall_us, began.cores_busy_s, began.own_cpu_s, began.cores
    )
    return load.measure(probe_s=0, since=began)


def test_the_works_own_threads_are_not_neighbours(monkeypatch):
    """The cores 1.9 s busy over 1 s, 1.8 s of it this process tree's (threads waiting for each
    other: 40% pressure): the neighbours took 5%, quiet; the same cores with only 0.9 s of it ours:
    the neighbours took 50%, busy, whatever the pressure says."""
    own_work = _window_over(monkeypatch, busy=(100.0, 101.9), own=(10.0, 11.8))
    assert 4.0 < own_work.others_window < 6.0 and own_work.pressure_window > 30
    assert own_work.busy_reason() is None and 89 < own_work.own_window < 91
    assert own_work.to_data()["others_cpu_window"] == own_work.others_window
    shared = _window_over(monkeypatch, busy=(100.0, 101.9), own=(10.0, 10.9), stall_us=(0.0, 0.0))
    assert 49.0 < shared.others_window < 51.0
    assert "other processes took 50% of this process's cores" in shared.busy_reason()


def test_one_neighbours_core_of_sixteen_is_busy_only_where_the_work_filled_them(monkeypatch):
    """16 cores: a neighbour on one (6%) beside work on the other 15 (every OpenMP barrier waits for
    the thread it displaced) is busy; beside single-threaded work, which it never met, quiet."""
    full = _window_over(monkeypatch, busy=(0.0, 16.0), own=(0.0, 15.0), cores=16, stall_us=(0.0, 0.0))
    assert 6 < full.others_window < 7 and "had to share them" in full.busy_reason()
    alone = _window_over(monkeypatch, busy=(0.0, 2.0), own=(0.0, 1.0), cores=16, stall_us=(0.0, 0.0))
    assert 6 < alone.others_window < 7 and alone.busy_reason() is None


@pytest.mark.parametrize(
    "why, readings",
    [
        ("a CPU quota below the cores", dict(busy=(0.0, 1.0), own=(0.0, 0.1), quota=1.0)),
        ("own time beyond the busy time of part of the cores", dict(busy=(0.0, 0.5), own=(0.0, 1.9))),
    ],
)
def test_a_window_that_cannot_tell_the_neighbours_judges_the_pressure(monkeypatch, why, readings):
    monkeypatch.setattr(load, "listed_cores", lambda: frozenset(range(4)))  # the work may use 2 of 4
    seen = _window_over(monkeypatch, stall_us=(0.0, 600_000.0 * readings.get("elapsed", 1.0)), **readings)
    assert seen.others_window is None, why
    assert "tasks waited for a CPU 60%" in seen.busy_reason()


def test_own_time_beyond_the_busy_time_of_every_core_reads_no_neighbours(monkeypatch):
    """On every core the machine has, the own time above the cores' busy time is accounting (a
    VM's stolen time counts in one and not the other): no neighbour, not an unreadable window."""
    monkeypatch.setattr(load, "listed_cores", lambda: frozenset(range(2)))
    seen = _window_over(monkeypatch, busy=(0.0, 1.4), own=(0.0, 1.6), stall_us=(0.0, 380_000.0))
    assert seen.others_window == 0.0 and seen.busy_reason() is None


def test_a_window_too_short_for_the_ticks_is_read_once_it_is_long_enough(monkeypatch):
    """20 ms of rounds on 2 cores: read after 0.25 s (0.5 core-seconds), the neighbours' share of
    that, not of the 20 ms."""
    seen = _window_over(monkeypatch, busy=(0.0, 0.3), own=(0.0, 0.05), elapsed=0.02, stall_us=(0.0, 0.0))
    assert seen.window_s >= load.MIN_WINDOW_CORE_S / 2
    assert seen.others_window == pytest.approx(100 * 0.25 / (2 * seen.window_s))


def test_proc_stat_busy_time_is_user_nice_system_irq_softirq_steal_of_the_cores_asked():
    stat = (
        "cpu  100 0 0 900 0 0 0 0 0 0\n"
        "cpu0 10 1 2 500 400 3 4 5 7 0\n"  # idle 500 and iowait 400 are not busy; guest 7 is in user
        "cpu1 20 0 0 0 0 0 0 0 0 0\n"
        "intr 12345\n"
    )
    assert load.busy_s_in(stat, frozenset({0})) == pytest.approx(25 * load._TICK_S)
    assert load.busy_s_in(stat, frozenset({0, 1})) == pytest.approx(45 * load._TICK_S)
    assert load.busy_s_in(stat, frozenset({0, 2})) is None  # a core the text lacks


def _burn_cpu_then_sleep(cpu_s: float, conn) -> None:
    start = time.process_time()
    while time.process_time() - start < cpu_s:
        pass
    conn.send("burnt")
    time.sleep(30)  # alive, not reaped: counted only through /proc


def test_a_live_childs_cpu_is_the_works_own():
    """A child that burnt 0.4 s of CPU and is still alive (its parent has not waited for it, so
    os.times() does not have it): own_cpu_s counts it through /proc."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    before = load.own_cpu_s()
    worker = ctx.Process(target=_burn_cpu_then_sleep, args=(0.4, child), daemon=True)
    worker.start()
    try:
        assert parent.poll(30) and parent.recv() == "burnt"
        assert load.own_cpu_s() - before >= 0.38
    finally:
        worker.terminate()
        worker.join()


def _burn_orphaned(seconds: float) -> None:
    """A burner that is not this process's descendant (its parent exits at once, so it is
    reparented): a neighbour, as another job on the machine is."""
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            _burn(seconds)
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)


def test_neighbours_on_every_core_read_busy():
    """Real processes: one reparented burner per core (neighbours, as another job's are) for the
    whole window: far above the bound however many cores, and however busy the machine is besides."""
    began = load.window()
    for _ in range(load.usable_cores()):
        _burn_orphaned(0.6)
    time.sleep(0.6)
    seen = load.measure(probe_s=0, since=began)
    assert seen.others_window > 2 * load.MAX_OTHERS and seen.busy_reason()


@pytest.mark.timing
def test_children_oversubscribing_the_cores_are_the_works_own():
    """Twice as many spinning children as cores: they wait for each other (high pressure), yet on a
    quiet machine no neighbour took anything."""
    ctx = multiprocessing.get_context("fork")
    began = load.window()
    burners = [ctx.Process(target=_burn, args=(0.8,), daemon=True) for _ in range(2 * load.usable_cores())]
    for b in burners:
        b.start()
    for b in burners:
        b.join()
    seen = load.measure(probe_s=0, since=began)
    assert seen.others_window < load.MAX_OTHERS, seen.to_data()
