"""Tests that tests/integration/test_interrupt.py runs in a pytest subprocess, by path (not collected by
``pytest tests``): two benchmark points that finish, then one that the interrupt catches inside
its rounds, which is how the H100 run crashed pytest-benchmark's writer (a point with no data)."""

import os
import time
from pathlib import Path

READY_ENV = "INTERRUPT_CASES_READY"  # a file the stuck point creates when it is stuck
ROUNDS_ENV = "INTERRUPT_CASES_ROUNDS_BEFORE"  # rounds the stuck point completes before it sticks


def test_bench_one(benchmark):
    assert benchmark(sum, range(100)) == 4950


def test_bench_two(benchmark):
    assert benchmark(sum, range(10)) == 45


def test_bench_stuck(benchmark):
    rounds_before = int(os.environ.get(ROUNDS_ENV, "0"))
    calls = []

    def target():
        calls.append(1)
        if len(calls) > rounds_before:
            Path(os.environ[READY_ENV]).touch()
            time.sleep(120)  # the signal arrives here

    benchmark.pedantic(target, rounds=rounds_before + 1)


def test_never_reached():
    assert True
