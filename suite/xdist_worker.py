"""A pytest-xdist worker (the test command's `-n auto`) set up so that its neighbours do not slow
it down and the pytest runs it starts are not mistaken for workers.

* **Threads.** Each worker, and each pytest run of the suite or torchrun a test starts from it,
  would use torch's default of one thread per core: N workers on N cores run N² threads, and an
  OpenMP region waits at its barrier for every one of them. Measured on the 2-core EPYC, the test
  command with two workers: at two threads each 1,006 s wall and 1,730 s of CPU, no faster than
  one process (916-1,041 s), rnn.hidden_detach's small autograd steps 47 s against under 9 s
  alone; at one thread each 744 s wall and 1,442 s of CPU. A worker gets cores ÷ workers threads
  (at least one), and so do the processes it starts (OMP_NUM_THREADS), unless `--threads` says
  otherwise. Nothing in the test command times
  (`--benchmark-disable`, `-m "not timing"`), so the thread count changes no figure it checks.
* **Its mark.** xdist sets PYTEST_XDIST_WORKER in the worker's environment, and pytest-benchmark
  reads it as "xdist is on" and turns timing off: a child run asked to time (`--benchmark-only`),
  or suite.collection's collection in this process, would stop with a usage error. The worker reads
  its own role from its config (`workerinput`), so the variables are dropped.
"""

from __future__ import annotations

import os

import torch

from harness.host import load

XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def threads_per_worker(workers: int, cores: int) -> int:
    return max(1, cores // max(1, workers))


def configure(config, environ=os.environ) -> None:
    """In a worker: its threads (and its children's) shared out, xdist's marks dropped. Elsewhere
    nothing."""
    if not is_worker(config):
        return
    for name in XDIST_VARIABLES:
        environ.pop(name, None)
    if config.getoption("--threads") is None:
        threads = threads_per_worker(int(config.workerinput["workercount"]), load.usable_cores())
        torch.set_num_threads(threads)
        environ["OMP_NUM_THREADS"] = str(threads)
