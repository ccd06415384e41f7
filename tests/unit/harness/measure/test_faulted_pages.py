"""harness.measure.faulted_pages: a figure is timed in a fresh child of a forkserver whose
environment holds glibc's initial mmap threshold, and a child that raises, dies or hangs gives a
reason instead of a figure (the run goes on)."""

from __future__ import annotations

import contextlib
import os
import time

import pytest

from harness.contract import record
from harness.host import allocator
from harness.measure import faulted_pages


def in_faulted_state(seconds: float = 0.0):
    """A build run in the child: fails unless the child's environment holds the faulted state's
    threshold (and not the pinned one), then times a short sleep."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    assert allocator.FAULTED_TUNABLES in tunables and allocator.TUNABLES not in tunables, tunables
    return (lambda: time.sleep(seconds)), contextlib.nullcontext


def raising():
    raise ValueError("no such point")


def dying():
    os._exit(3)


def hanging():
    time.sleep(3600)


def test_a_figure_comes_from_a_child_in_the_faulted_state():
    allocator.pin()  # the suite's own state: the child must not inherit it
    figure = faulted_pages.figure(in_faulted_state, 0.002, threads=1)
    assert "error" not in figure, figure
    assert figure["state"] == record.FAULTED_PAGES
    assert allocator.FAULTED_TUNABLES in figure["tunables"].split(":")
    assert 0.002 <= figure["median_s"] < 0.05 and figure["calls"] >= figure["blocks"] >= 1
    assert isinstance(figure["busy"], str)  # the load probe's word on the child's stretch


def test_each_figure_is_a_new_child():
    """A fresh fork every time: the child's process ID differs between two figures."""
    seen = {faulted_pages.figure(_pid_build, threads=1)["error"] for _ in range(2)}
    assert len(seen) == 2, seen


def _pid_build():
    raise RuntimeError(f"pid {os.getpid()}")


@pytest.mark.parametrize(
    "build, says", [(raising, "ValueError: no such point"), (dying, "exit code 3")], ids=["raises", "dies"]
)
def test_a_child_that_fails_gives_the_reason(build, says):
    figure = faulted_pages.figure(build, threads=1)
    assert set(figure) == {"error"} and says in figure["error"], figure


def test_a_child_past_its_time_is_killed(monkeypatch):
    monkeypatch.setattr(faulted_pages, "TIMEOUT_S", 1.0)
    started = time.monotonic()
    figure = faulted_pages.figure(hanging, threads=1)
    assert "no figure within 1 s" in figure["error"] and time.monotonic() - started < 30


@pytest.mark.parametrize(
    "scope, profile, cases",
    [
        ("auto", "quick", faulted_pages.REPRESENTATIVE),
        ("auto", "full", None),
        ("all", "quick", None),
        ("none", "full", ()),
        ("representative", "full", faulted_pages.REPRESENTATIVE),
    ],
)
def test_which_cases_a_scope_times(scope, profile, cases):
    assert faulted_pages.cases_in(scope, profile) == cases


def test_a_forkserver_without_the_tunables_gives_no_figure(monkeypatch):
    """A forkserver started before the suite's (by someone else, or restarted after it died) has
    the run's own environment: its child says so instead of timing in the wrong state."""
    import multiprocessing.forkserver

    server = multiprocessing.forkserver._forkserver
    server._stop()  # the next figure starts a new one, here without the tunables
    monkeypatch.setattr(faulted_pages, "_glibc_tunables", lambda value: contextlib.nullcontext())
    faulted_pages._context = None
    try:
        figure = faulted_pages.figure(in_faulted_state, 0.002, threads=1)
    finally:
        server._stop()
        faulted_pages._context = None  # the next figure starts the server as the suite does
    assert "median_s" not in figure and "not in the faulted state" in figure["error"], figure
