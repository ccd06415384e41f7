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
    # Without /proc/stat's busy time the pressure over the window is what is judged.
    monkeypatch.setattr(load, "cores_busy_s", lambda cores=None: None)
    """A pair timed for 1 s right after 9 s of oversubscribed work: avg10 says busy, its own rounds
    waited for a CPU 2% of their time; and the other way round, a quiet avg10 with busy rounds."""
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
    monkeypatch.setattr(load, "cores_busy_s", lambda cores=None: None)
    monkeypatch.setattr(load, "cpu_pressure", lambda: 14.0)
    seen = load.measure(probe_s=0, since=load.window())
    assert seen.pressure_window is None and "of the last 10 s" in seen.busy_reason()


def _window_over(
    monkeypatch, *, busy: tuple[float, float], own: tuple[float, float], stall_us=(0.0, 400_000.0)
):
    """A 1 s window on 2 cores whose readings at its start and end are the given pairs."""
    readings = {"busy": iter(busy), "own": iter(own), "stall": iter(stall_us)}
    monkeypatch.setattr(load, "_affinity", lambda: {0, 1})
    monkeypatch.setattr(load, "cores_busy_s", lambda cores=None: next(readings["busy"]))
    monkeypatch.setattr(load, "own_cpu_s", lambda: next(readings["own"]))
    monkeypatch.setattr(load, "cpu_stall_us", lambda: next(readings["stall"]))
    began = load.window()
    began = load.Window(load.time.perf_counter() - 1.0, began.stall_us, began.cores_busy_s, began.own_cpu_s)
    return load.measure(probe_s=0, since=began)


def test_the_works_own_threads_are_not_neighbours(monkeypatch):
    """The cores 1.9 s busy over 1 s, 1.8 s of it this process tree's (threads waiting for each
    other: 40% pressure): the neighbours took 5%, quiet; the same cores with only 0.9 s of it ours:
    the neighbours took 50%, busy, whatever the pressure says."""
    own_work = _window_over(monkeypatch, busy=(100.0, 101.9), own=(10.0, 11.8))
    assert 4.0 < own_work.others_window < 6.0 and own_work.pressure_window > 30
    assert own_work.busy_reason() is None
    assert own_work.to_data()["others_cpu_window"] == own_work.others_window
    shared = _window_over(monkeypatch, busy=(100.0, 101.9), own=(10.0, 10.9), stall_us=(0.0, 0.0))
    assert 49.0 < shared.others_window < 51.0
    assert "other processes took 50% of this process's cores" in shared.busy_reason()


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


def test_a_neighbour_reads_busy_and_the_works_own_workers_do_not():
    """Real processes: a burner that is a child (the work's own) is left out of the neighbours'
    share; one reparented away (a neighbour) is in it: one core of two for the whole window, about
    half, and far above the bound however busy the machine is besides."""
    began = load.window()
    _burn_orphaned(0.6)
    time.sleep(0.6)
    assert load.measure(probe_s=0, since=began).others_window > 2 * load.MAX_OTHERS


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
