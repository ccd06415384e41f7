"""SIGINT and SIGTERM during a run: held back while a step that must not be cut in half runs
(`held`), a child process polled, signalled and waited for so that an interrupt cannot hang the
run (`poll`, `send`, `wait`), and SIGTERM turned into an interrupt like SIGINT, each recorded
(`Interrupts`).

Three steps need holding: writing the results (a second Ctrl-C or a `timeout` that fires at the
end would cut the one write short), a torch profiler session (an exception raised while the
profiler starts or stops leaves its global callbacks half registered; the process then
segfaulted at exit after a SIGTERM, in CI) and each call into a child's `Popen` that takes its
lock (below). Python runs signal handlers between bytecodes in
the main thread, so swapping the handlers there is enough: no OS signal mask is involved.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

HELD = (signal.SIGINT, signal.SIGTERM)
# A third signal still interrupts: a step that hangs can always be stopped.
ESCAPE_AFTER = 3


@contextlib.contextmanager
def held(redeliver: bool = True) -> Iterator[list[int]]:
    """Record SIGINT/SIGTERM instead of acting on them inside the block; yield the list of those
    that arrived. With `redeliver`, the first that arrived is raised again once the handlers are
    back, so the interrupt happens right after the block (as if it had landed there); its handler
    raises, so the others are not (they are in the list)."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived  # handlers can only be set in the main thread; signals only run there
        return

    def hold(signum, frame):
        arrived.append(signum)
        if len(arrived) >= ESCAPE_AFTER:
            raise KeyboardInterrupt

    before: dict[int, object] = {}
    try:
        # One at a time inside the try, each handler noted before it is swapped: a signal whose
        # handler raises anywhere in between leaves every swapped one to be put back.
        for s in HELD:
            before[s] = signal.getsignal(s)
            signal.signal(s, hold)
        yield arrived
    finally:
        _put_back(list(before.items()))
    # Not reached when the block raised (the escape included): that exception is the interrupt.
    if redeliver and arrived:
        signal.raise_signal(arrived[0])


def _put_back(handlers: list) -> None:
    """Each handler back, even where one put back first raises (its signal was waiting): the rest
    are put back in a finally, so none is left recording into a list nobody reads."""
    if handlers:
        (signum, handler), rest = handlers[0], handlers[1:]
        try:
            signal.signal(signum, handler)
        finally:
            _put_back(rest)


# A child process stopped and waited for under interrupts. CPython's Popen takes a lock before the
# try that frees it (in poll, and so in send_signal and kill, and in each turn of wait's loop): an
# interrupt landing between the two leaves the lock taken for good, and every later wait() on that
# process hangs (seen in CI: an interrupted run waited forever for a worker it had already
# stopped). Each lock-taking call is made with interrupts held; the waiting is done between them.
WAIT_POLL_S = 0.05


def poll(proc: subprocess.Popen) -> int | None:
    """`proc.poll()`, interrupts held."""
    with held():
        return proc.poll()


def send(proc: subprocess.Popen, signum: int) -> None:
    """`proc.send_signal(signum)` (SIGKILL: `proc.kill()`), interrupts held."""
    with held():
        proc.send_signal(signum)


def wait(proc: subprocess.Popen, timeout_s: float | None = None) -> int:
    """`proc.wait(timeout_s)` made of `poll`s: an interrupt lands between two of them, never inside
    one. Raises subprocess.TimeoutExpired as `Popen.wait` does."""
    end = None if timeout_s is None else time.monotonic() + timeout_s
    delay = 0.001
    while (code := poll(proc)) is None:
        if end is not None and time.monotonic() >= end:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        time.sleep(delay)
        delay = min(2 * delay, WAIT_POLL_S)
    return code


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt."""


class Interrupts:
    """SIGTERM (a CI timeout, a scheduler, ``timeout``) raised as KeyboardInterrupt like SIGINT,
    so a run's own finish runs and its results are written instead of the process dying.

    Every interrupt is recorded (`reason`, with the test `running` then) before it is raised: a
    second Ctrl-C that lands while the first is handled (0.3 s apart once wrote a JSON marked
    complete, holding a point measured halfway) must still leave the run marked partial. A handler
    someone else installed is never replaced."""

    def __init__(self):
        self.reason = ""  # why the run was cut short, or "" while it was not
        self.running: str | None = None
        self._before: dict[int, object] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self._before[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._raise)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._before[signal.SIGINT] = signal.signal(signal.SIGINT, self._raise)

    def restore(self) -> None:
        for signum, handler in self._before.items():
            signal.signal(signum, handler)
        self._before.clear()

    def note(self, what: str) -> None:
        self.reason = what + (f" while {self.running} was running" if self.running else "")

    def _raise(self, signum, frame):
        if not self.reason:
            self.note(signal.Signals(signum).name)
        if signum == signal.SIGTERM:
            raise Terminated("SIGTERM")
        raise KeyboardInterrupt
