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
