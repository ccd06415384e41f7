"""SIGINT and SIGTERM held where they must wait (harness/host/signals.py): a second signal while the
results are written waits for the write, and one during a profiler session's start or stop lands after
it."""

import os
import signal

import pytest

from harness.host import signals


def test_second_signal_while_the_results_are_written_waits():
    before = signal.getsignal(signal.SIGINT)
    with signals.held(redeliver=False) as held:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    assert held == [signal.SIGINT, signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) == before


class _Stopped(Exception):
    pass


def test_signal_in_a_profiler_session_lands_after_it():
    """A SIGTERM inside a held step (a profiler session) is raised once the step is over, not
    in it: the step finishes, then the run's own handler acts."""

    def stop(signum, frame):
        raise _Stopped(signum)

    before = signal.signal(signal.SIGTERM, stop)
    finished = False
    try:
        with pytest.raises(_Stopped):
            with signals.held():
                os.kill(os.getpid(), signal.SIGTERM)
                os.kill(os.getpid(), signal.SIGTERM)
                finished = True
        assert finished, "the held step was cut short"
        with pytest.raises(ValueError):  # the block's own error is the one that propagates
            with signals.held():
                os.kill(os.getpid(), signal.SIGTERM)
                raise ValueError
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.fixture
def sleeper():
    """A child process that would run a minute, with SIGINT raising KeyboardInterrupt here (as in a
    user's pytest) for the test; killed and reaped after it whatever the test left."""
    import subprocess
    import sys

    from tests import interrupt_in_lock

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    signal.signal(signal.SIGINT, before)
    interrupt_in_lock.stop(proc)


@pytest.mark.parametrize(
    "call",
    [
        signals.poll,
        lambda proc: signals.send(proc, signal.SIGTERM),
        lambda proc: signals.wait(proc, timeout_s=0.2),
    ],
    ids=["poll", "send", "wait"],
)
def test_an_interrupt_inside_a_child_process_call_leaves_its_lock_free(sleeper, call):
    """SIGINT landing where Popen has taken its lock and not yet entered the try that frees it:
    the call finishes first, the interrupt follows, and the process can still be waited for (red
    before: the lock stayed taken and wait() hung)."""
    import subprocess

    from tests import interrupt_in_lock

    lock = interrupt_in_lock.install(sleeper)
    with pytest.raises(KeyboardInterrupt):
        call(sleeper)
    assert lock.signalled and not lock.locked()
    signals.send(sleeper, signal.SIGKILL)
    assert signals.wait(sleeper, timeout_s=10) in (-signal.SIGTERM, -signal.SIGKILL)
    with pytest.raises(subprocess.TimeoutExpired):  # and a wait that times out says so
        signals.wait(subprocess.Popen(["sleep", "5"]), timeout_s=0.05)


@pytest.mark.parametrize("landing_after", [0, len(signals.HELD)], ids=["first-swap", "first-put-back"])
def test_every_handler_is_put_back_when_an_interrupt_lands_between_two(monkeypatch, landing_after):
    """An interrupt raised right after `held` swaps its first handler, or puts the first back: the
    others are put back all the same (red before: one stayed `hold`, recording every later Ctrl-C
    into a list nobody reads)."""
    real = signal.signal
    originals = {s: signal.getsignal(s) for s in signals.HELD}
    calls = []

    def then_an_interrupt(signum, handler):
        previous = real(signum, handler)
        calls.append(signum)
        if len(calls) == landing_after + 1:
            raise KeyboardInterrupt  # a signal landing right after this swap
        return previous

    monkeypatch.setattr(signal, "signal", then_an_interrupt)
    with pytest.raises(KeyboardInterrupt):
        with signals.held():
            pass
    monkeypatch.undo()
    assert {s: signal.getsignal(s) for s in signals.HELD} == originals
