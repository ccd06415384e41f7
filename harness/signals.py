"""SIGINT and SIGTERM held back while a step that must not be cut in half runs.

Two steps need it: writing the results (a second Ctrl-C or a `timeout` that fires at the end
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
