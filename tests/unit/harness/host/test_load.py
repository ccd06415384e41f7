"""harness.host.load: the readings become one sentence, and the probe sees CPU burners."""

from __future__ import annotations

import multiprocessing
import time

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
    monkeypatch.setattr(load, "cpu_pressure", lambda: 14.0)
    seen = load.measure(probe_s=0, since=load.window())
    assert seen.pressure_window is None and "of the last 10 s" in seen.busy_reason()
