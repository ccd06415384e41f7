"""harness.run.ahead: jobs run in the background a few at a time, each read once by its key, its
exception raised in the reader."""

from __future__ import annotations

import threading
import time

import pytest

from harness.run.ahead import Ahead


def test_each_job_is_read_by_its_key_in_any_order():
    ahead = Ahead(2)
    ahead.start([("a", lambda: 1), ("b", lambda: 2), ("c", lambda: 3)])
    assert "b" in ahead and "z" not in ahead
    assert [ahead.result(k) for k in ("c", "a", "b")] == [3, 1, 2]


def test_no_more_jobs_run_at_once_than_workers():
    running, most, lock = 0, 0, threading.Lock()

    def job():
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1

    ahead = Ahead(2)
    ahead.start((k, job) for k in range(6))
    for k in range(6):
        ahead.result(k)
    assert most == 2


def test_jobs_start_in_the_order_given():
    started = []
    ahead = Ahead(1)
    ahead.start((k, lambda k=k: started.append(k)) for k in ("hang", "spawn", "setup"))
    ahead.result("setup")
    assert started == ["hang", "spawn", "setup"]


def test_a_jobs_exception_is_raised_in_its_reader_and_the_others_still_run():
    def fails():
        raise AssertionError("the ranks' all-reduce gave [1.0, 2.0]")

    ahead = Ahead(1)
    ahead.start([("bad", fails), ("good", lambda: "ok")])
    with pytest.raises(AssertionError, match=r"all-reduce gave \[1.0, 2.0\]"):
        ahead.result("bad")
    assert ahead.result("good") == "ok"


def test_a_key_started_twice_runs_once():
    calls = []
    ahead = Ahead(2)
    ahead.start([("a", lambda: calls.append(1))])
    ahead.start([("a", lambda: calls.append(2))])
    ahead.result("a")
    time.sleep(0.05)
    assert calls == [1]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        Ahead(0)
    with pytest.raises(KeyError, match="no job 'x'"):
        Ahead(1).result("x")


def test_a_job_read_twice_gives_its_result_twice_and_a_stuck_one_times_out():
    ahead = Ahead(1)
    ahead.start([("a", lambda: 7), ("stuck", lambda: time.sleep(5))])
    assert ahead.result("a") == ahead.result("a") == 7
    with pytest.raises(TimeoutError, match="stuck did not finish in 0 s"):
        ahead.result("stuck", timeout_s=0.05)
