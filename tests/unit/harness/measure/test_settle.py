"""harness.measure.settle: a block starts once the process's other threads stop running, the
caller's own thread not counted, never later than the cap. The thread table is faked here; the
timing tier waits for a real spinning thread (tests/timing)."""

from __future__ import annotations

import threading

import pytest

from harness.host import processes
from harness.measure import block_context, settle


def _table(states: dict[int, str]) -> dict[int, processes.Process]:
    return {tid: processes.Process(1, state, 0, 0.0) for tid, state in states.items()}


@pytest.fixture
def fake_threads(monkeypatch):
    """The thread table as a script: each reading takes the next entry (the last one repeats)."""
    me = threading.get_native_id()
    script = []
    reads = []

    def threads(pid="self"):
        reads.append(pid)
        return _table({me: "R", **script[min(len(reads), len(script)) - 1]})

    monkeypatch.setattr(processes, "threads", threads)
    monkeypatch.setattr(settle, "POLL_S", 0.0)
    return script, reads


def test_it_waits_while_another_thread_runs_and_not_for_its_own(fake_threads):
    script, reads = fake_threads
    script += [{7: "R", 8: "S"}, {7: "R"}, {7: "S", 8: "S"}]
    settle.idle_others(cap_s=10)
    assert len(reads) == 3  # stopped at the first reading with no other thread running


def test_with_only_sleeping_threads_it_does_not_wait(fake_threads):
    script, reads = fake_threads
    script += [{7: "S", 8: "D"}]
    settle.idle_others(cap_s=10)
    assert len(reads) == 1


def test_a_thread_that_never_stops_costs_the_cap_then_the_block_goes_on(fake_threads):
    script, reads = fake_threads
    script += [{7: "R"}]
    assert settle.idle_others(cap_s=0.02) >= 0.02  # returns: the loop ends at the cap
    assert len(reads) > 1


def test_a_settled_variant_waits_on_each_direct_call_and_once_per_block(monkeypatch):
    waits = []
    monkeypatch.setattr(settle, "idle_others", lambda cap_s=settle.CAP_S: waits.append(cap_s) or 0.0)

    @settle.settled
    def query(x):
        return x + 1

    assert query(1) == 2 and len(waits) == 1
    call, context = block_context.entered(query, (1,))
    with context():
        for _ in range(5):
            call()
    assert len(waits) == 2


@pytest.mark.skipif(not processes.threads(), reason="needs Linux's /proc")
def test_after_a_gemm_the_wait_ends_with_no_other_thread_running():
    """The premise on this machine's torch: its pool's threads stop running after a parallel
    region (a pool that sleeps at once leaves nothing to wait for), and the wait ends there."""
    import torch

    a = torch.randn(256, 256)
    for _ in range(20):
        a @ a
    waited = settle.idle_others(cap_s=2.0)
    assert waited < 2.0, "torch's pool still running 2 s after its last region"
    assert settle.others_running() == []
