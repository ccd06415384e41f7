"""Untimed work started ahead of the tests that read it, a few at a time, in background threads.

Why: a launch of `cases._launch.dist_worker` that times nothing (the set-up facts under torchrun, mp.spawn
and the notes' launcher; the launcher's fault scenarios) spends most of its wall time in single
process phases: torchrun importing torch (4.5 s on the 2-core EPYC), then its ranks importing it,
then, for the hanging rank, 15 s of waiting for the timeout. One after another they took 70 s of a
suite run there; two at a time overlap each one's idle or single-core stretches with another's.
Timed work never runs beside them: a run starts only the untimed launches whose tests come next,
one after another, and the test that reads the last of them waits for it, so they are all over
before the next test starts.

Threads, not processes: each job spends its time waiting on its own subprocesses. Daemon threads,
so an interrupted run exits without waiting for them; the launches they started die with the
process (`harness.run.launch.dying_with_this_process`: the kernel kills a launch when the *thread*
that started it is gone, so the threads never exit before the process does). A job's exception is
raised again, unchanged, in the test that reads it; a reader waits at most `timeout_s` (a job that
never returns must not hang the run).

Plain Python; the pytest glue that says which tests come next is `suite/test_distributed.py`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable, Iterable


class Ahead:
    """Jobs by key, run by `workers` background threads in the order given."""

    def __init__(self, workers: int):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.workers = workers
        self._done: dict[Hashable, threading.Event] = {}
        self._outcome: dict[Hashable, tuple[object, BaseException | None]] = {}
        self._queue: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []

    def __contains__(self, key: Hashable) -> bool:
        return key in self._done

    def start(self, jobs: Iterable[tuple[Hashable, Callable[[], object]]]) -> None:
        """Queue these jobs (a key already queued is not queued again) and start the threads."""
        for key, job in jobs:
            if key not in self._done:
                self._done[key] = threading.Event()
                self._queue.put((key, job))
        while len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, name=f"ahead-{len(self._threads)}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def result(self, key: Hashable, timeout_s: float | None = None) -> object:
        """The job's return value once it has finished; its exception raised again; TimeoutError
        if it has not finished in `timeout_s`."""
        if key not in self._done:
            raise KeyError(f"no job {key!r} was started ahead")
        if not self._done[key].wait(timeout_s):
            raise TimeoutError(f"{key} did not finish in {timeout_s:.0f} s")
        value, error = self._outcome[key]
        if error is not None:
            raise error
        return value

    def _work(self) -> None:
        while True:
            key, job = self._queue.get()
            try:
                self._outcome[key] = (job(), None)
            except BaseException as error:  # handed to the reader, whatever it is
                self._outcome[key] = (None, error)
            finally:
                self._done[key].set()
