"""A `subprocess.Popen`'s waitpid lock with a SIGINT raised right after it is first taken: where
CPython's `Popen.poll` (and so `send_signal`, `kill`, and each turn of `wait`'s loop) can be
interrupted between taking the lock and the try that frees it. Installed on a real Popen by
`install`, for the tests of `harness.host.signals`' child-process calls."""

from __future__ import annotations

import signal
import subprocess
import threading


class LockTheInterruptLandsIn:
    def __init__(self):
        self.lock, self.signalled = threading.Lock(), False

    def acquire(self, blocking=True, timeout=-1):
        got = self.lock.acquire(blocking, timeout)
        if got and not self.signalled:
            self.signalled = True
            signal.raise_signal(signal.SIGINT)  # its handler runs here, the lock taken
        return got

    def release(self):
        self.lock.release()

    def locked(self):
        return self.lock.locked()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


def install(proc: subprocess.Popen) -> LockTheInterruptLandsIn:
    """The lock on `proc`, in place of its own (a private attribute of CPython 3.8-3.13's Popen)."""
    assert hasattr(proc, "_waitpid_lock"), (
        "this Python's Popen has no _waitpid_lock: the test's premise is gone"
    )
    proc._waitpid_lock = LockTheInterruptLandsIn()
    return proc._waitpid_lock


def stop(proc: subprocess.Popen) -> None:
    """Kill and reap `proc` even where a failing test left its lock taken (wait() would hang)."""
    proc.kill()
    if proc._waitpid_lock.locked():
        proc._waitpid_lock.release()
    proc.wait()
