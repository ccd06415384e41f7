"""SIGINT and SIGTERM during a run: held back while a step that must not be cut in half runs
(`held`), and SIGTERM turned into an interrupt like SIGINT, each recorded (`Interrupts`).

Two steps need holding: writing the results (a second Ctrl-C or a `timeout` that fires at the end
would cut the one write short) and a torch profiler session (an exception raised while the
profiler starts or stops leaves its global callbacks half registered; the process then
segfaulted at exit after a SIGTERM, in CI). Python runs signal handlers between bytecodes in
the main thread, so swapping the handlers there is enough: no OS signal mask is involved.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

HELD = (signal.SIGINT, signal.SIGTERM)
# A third signal still interrupts: a step that hangs can always be stopped.
ESCAPE_AFTER = 3


@contextlib.contextmanager
def held(redeliver: bool = True) -> Iterator[list[int]]:
    """Record SIGINT/SIGTERM instead of acting on them inside the block; yield the list of those
    that arrived. With `redeliver`, each kind that arrived is raised again once the handlers are
    back, so the interrupt happens right after the block (as if it had landed there)."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived  # handlers can only be set in the main thread; signals only run there
        return

    def hold(signum, frame):
        arrived.append(signum)
        if len(arrived) >= ESCAPE_AFTER:
            raise KeyboardInterrupt

    before = {s: signal.signal(s, hold) for s in HELD}
    try:
        yield arrived
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    # Not reached when the block raised (the escape included): that exception is the interrupt.
    if redeliver:
        for s in dict.fromkeys(arrived):  # each kind once, in the order they came
            signal.raise_signal(s)


def poll(proc) -> int | None:
    """`proc.poll()` (a `subprocess.Popen`) with SIGINT/SIGTERM held: CPython's poll takes a lock
    before the try that frees it, so an interrupt landing between the two leaves the lock taken for
    good and every later `wait()` on that process hangs (seen in CI: an interrupted run waited
    forever for a worker it had already stopped)."""
    with held():
        return proc.poll()


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
