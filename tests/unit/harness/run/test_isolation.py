"""Isolation from sticky CUDA errors (harness.run.isolation, suite/isolation_plugin.py) in this process,
without a run: the probe, a worker's arguments and node IDs, the failure that killed the context, a
worker's events replayed as this process's reports and the hand-over. The real pytest runs in a
subprocess are in tests/integration/test_isolation.py."""

from types import SimpleNamespace

import pytest

from harness.run import isolation
from suite import worker_reports

STICKY = "CUDA error: device-side assert triggered"


def test_probe_sees_a_planted_error_and_only_then():
    context = isolation.Context({"t::planted"}, probe=lambda: None)
    context.before_call("t::other")
    assert context.error() is None
    with pytest.raises(RuntimeError, match="device-side assert triggered"):
        context.before_call("t::planted")
    assert STICKY in context.error()
    with pytest.raises(RuntimeError):  # every later call in the process, as on a dead context
        context.before_call("t::other")


def test_worker_arguments_drop_only_the_outputs_of_the_first_process():
    args = [
        "suite",
        "-k",
        "x",
        "--benchmark-json",
        "a.json",
        "--benchmark-json=b.json",
        "--junitxml=j.xml",
        "--benchmark-autosave",
        "--lf",
        "--basetemp",
        "/tmp/b",
        "-m",
        "gpu",
        "--profile",
        "full",
    ]
    assert isolation.worker_args(args) == ["suite", "-k", "x", "-m", "gpu", "--profile", "full"]


def test_kernel_assert_text_is_found_in_captured_output():
    stderr = f"noise\n{isolation.SIMULATED_KERNEL_LINE}\nmore noise\n"
    assert isolation.kernel_assert_lines(stderr, "") == [isolation.SIMULATED_KERNEL_LINE]


def test_a_compile_that_fails_on_a_dead_context_fails_the_test_instead_of_skipping(monkeypatch):
    """A failed compile or graph capture is a skip with its reason, unless the CUDA context died
    under it: then it is the test's failure, so isolation hands the rest of the run over."""
    from harness.point import variant_benchmark
    from harness.run import isolation
    from plan import InputCache, variant_points

    twin = next(
        p for p in variant_points("quick", ("cpu",), "representative") if p.variant_name == "compiled"
    )
    cache = InputCache(seed=0)
    at = variant_benchmark.VariantAtPoint(
        id=twin.id,
        fn=twin.variant.fn,
        device=twin.device,
        dtype=twin.dtype,
        tolerance=twin.tolerance,
        inputs=lambda: cache.get(twin),
        compiles=twin.compiled_from,
    )

    def broken(*inputs):
        raise isolation.simulated_error("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(twin.variant.fn, "compile_and_time", broken)
    with pytest.raises(variant_benchmark.NotMeasured, match="torch.compile failed"):
        variant_benchmark.compile_first(at)
    monkeypatch.setattr(isolation, "cuda_context_error", lambda: "an illegal memory access was encountered")
    with pytest.raises(RuntimeError, match="illegal memory access"):
        variant_benchmark.compile_first(at)


def test_isolation_is_off_under_no_isolation_pdb_and_an_xdist_worker():
    assert isolation.enabled(False, False, environ={})
    assert not isolation.enabled(True, False, environ={})
    assert not isolation.enabled(False, True, environ={})
    assert not isolation.enabled(False, False, environ={"PYTEST_XDIST_WORKER": "gw0"})


def test_a_worker_keeps_its_node_ids_in_collection_order_and_deselects_the_rest():
    items = [SimpleNamespace(nodeid=n) for n in ("a", "b", "c", "d")]
    kept, dropped = isolation.partition(items, ["d", "b", "z"])
    assert [i.nodeid for i in kept] == ["b", "d"]
    assert [i.nodeid for i in dropped] == ["a", "c"]


def test_only_the_first_failure_on_a_dead_context_hands_over_and_only_when_enabled():
    probe = iter([None, STICKY, "a later error"])
    state = isolation.State(isolation.Context(probe=lambda: next(probe)), True, journal=lambda e: None)
    assert state.failed("t::healthy") is None
    assert state.dead is None and not state.handing_over
    assert state.failed("t::killer") == STICKY
    assert state.dead == ("t::killer", STICKY) and state.handing_over
    assert state.failed("t::later") is None  # not probed again: the first death is the one
    assert state.dead == ("t::killer", STICKY)
    off = isolation.State(isolation.Context(probe=lambda: STICKY), False, journal=lambda e: None)
    off.failed("t::killer")
    assert off.dead is not None and not off.handing_over


def test_a_hand_over_is_listed_before_its_workers_own_and_journaled_even_if_the_workers_raise(monkeypatch):
    journal, said = [], []
    state = isolation.State(isolation.Context(probe=lambda: STICKY), True, journal=journal.append)
    state.failed("t::killer")
    from_worker = isolation.hand_over("t::c", "another error", 1)

    def workers(args, nodeids, *, cwd, record, replay, fail, stopped):
        record["workers"] += 1
        replay(isolation.hand_over_event(from_worker))
        raise KeyboardInterrupt

    monkeypatch.setattr(isolation, "run_in_workers", workers)
    monkeypatch.setattr(isolation, "release_device_memory", lambda: None)
    replay = lambda event: worker_reports.replay_event(  # noqa: E731
        event, point=None, hand_over=state.passed_up, deserialize=None, hook=None
    )
    with pytest.raises(KeyboardInterrupt):
        state.hand_over_rest(
            ["suite"], ["t::b", "t::c"], cwd=".", say=said.append, replay=replay, fail=None, stopped=None
        )
    own = {"after": "t::killer", "error": STICKY, "tests": 2, "workers": 1}
    assert said == [isolation.handing_over_line(own)]
    assert said[0].startswith(f"sticky CUDA error in t::killer ({STICKY}): the 2 tests")
    assert state.handed_over == {"t::b", "t::c"}
    assert state.hand_overs == [own, from_worker]
    assert journal == [isolation.hand_over_event(from_worker), isolation.hand_over_event(own)]


@pytest.fixture
def default_sigint():
    """SIGINT raising KeyboardInterrupt, as in a user's pytest, for the test and back after: what
    the process had is the runner's (in one test command under pytest-xdist a raised SIGINT reached
    no KeyboardInterrupt here, in these two tests only)."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_an_interrupt_while_a_worker_event_is_taken_in_loses_nothing(default_sigint):
    """SIGINT arriving while one of a worker's finished points is being taken in: that point is
    taken in whole, the interrupt follows it, and the events after it wait in the queue for the
    drain the interrupt handler makes (under load, a point was lost here: seen in a CI run)."""
    import signal

    events = [{"kind": "benchmark", "row": {"name": n}} for n in ("second", "third", "one")]
    worker = SimpleNamespace(events=lambda: list(events))
    followed, taken = isolation.Followed(), []

    def replay(event):
        if not taken:
            signal.raise_signal(signal.SIGINT)  # lands in the middle of taking in the first point
        taken.append(event["row"]["name"])

    with pytest.raises(KeyboardInterrupt):
        isolation._drain(worker, followed, replay)
    assert taken == ["second"] and [e["row"]["name"] for e in followed.queue] == ["third", "one"]
    worker.events = list  # nothing new: the handler's drain takes in what was queued
    isolation._drain(worker, followed, replay)
    assert taken == ["second", "third", "one"] and not followed.queue


def test_an_interrupt_while_a_workers_journal_is_read_loses_nothing(default_sigint):
    """SIGINT arriving while the journal is read: the journal's offset has moved past what was read,
    so those events must reach the queue, and the drain the interrupt handler makes takes them in
    (under load the test command lost every point a worker had finished: the interrupt landed
    between the read and the queue)."""
    import signal

    events = [{"kind": "benchmark", "row": {"name": n}} for n in ("second", "third")]
    reads = iter([events, []])

    def read_once_then_nothing():
        chunk = next(reads)
        if chunk:
            signal.raise_signal(signal.SIGINT)  # lands after the offset moved, before the queue
        return list(chunk)

    worker = SimpleNamespace(events=read_once_then_nothing)
    followed, taken = isolation.Followed(), []
    with pytest.raises(KeyboardInterrupt):
        isolation._drain(worker, followed, lambda e: taken.append(e["row"]["name"]))
    isolation._drain(worker, followed, lambda e: taken.append(e["row"]["name"]))
    assert taken == ["second", "third"] and not followed.queue


def test_an_interrupt_while_a_worker_is_polled_leaves_it_stoppable(default_sigint):
    """SIGINT landing inside the poll of a running worker: the poll finishes and frees its lock,
    the interrupt follows, and stopping the worker then ends (in CI the lock stayed taken and the
    interrupted run hung, waiting for a worker it had already stopped)."""
    import subprocess
    import sys

    from tests import interrupt_in_lock

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = interrupt_in_lock.install(proc)
        worker = isolation.Worker.__new__(isolation.Worker)  # a running process, no pytest in it
        worker.proc = proc
        with pytest.raises(KeyboardInterrupt):
            worker.returncode  # noqa: B018 - the poll is the point
        assert lock.signalled and not lock.locked()
        worker.interrupt(grace_s=10)
        assert proc.returncode is not None
    finally:
        interrupt_in_lock.stop(proc)
