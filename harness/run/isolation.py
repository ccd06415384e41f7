"""Isolation from sticky CUDA errors: when a test leaves the process's CUDA context dead, the tests
after it run in a fresh worker process, and their outcomes and benchmark points come back to the
process the user started, which writes the one results JSON.

Why this mechanism. A device-side assert or an illegal address is *sticky*: every later CUDA call
in the process raises the same error, and the context cannot be reset from inside it; on the H100
one `torch.multinomial` assert turned 186 later tests red. The ways out, and why this one:

* A fresh process per test (TorchBench runs each model in a subprocess worker) isolates
  everything, but pays process start, CUDA initialisation and collection for each of ~1400
  tests, and each process would write its own pytest-benchmark JSON.
* A subprocess only for the checks that can assert needs to know which can: the multinomial
  check that took the H100 run down was not expected to, and any kernel can hit an illegal
  address.
* pytest-xdist with a worker that exits when its context is dead (cuML's plugin: after a failed
  test, probe with a tiny allocation and ``os._exit`` so xdist starts a new worker) keeps one
  session, but pytest-benchmark switches itself off under xdist: no timings at all.
* Re-running the rest of the selection in a new process after a crash (PyTorch CI: the
  ``stepcurrent`` plugin of ``test/conftest.py`` with ``run_test.py``) costs one new process per
  sticky error and nothing when there is none. That is the one used here, with two changes: the
  context is probed after a failed test (cuML's probe) instead of waiting for the process to
  crash, because a sticky error does not crash it; and the worker's reports and points are
  streamed back to the first process, so pytest-benchmark's JSON, the terminal summary, the
  exit status and ``outcomes[]`` cover the whole run as if it had run in one process.

The worker is started with ``subprocess`` (fork + exec: a CUDA context does not survive a bare
fork), runs ``python -m pytest`` with the first process's arguments, keeps only the remaining
node IDs, and writes its events to a journal (`harness.run.journal`) that the first process follows.
A worker that dies in its turn (a second sticky error hands off again, so only a hard crash) has
the test it was running reported as failed, and the rest go to the next worker.

Limits: the dead context keeps the device memory it held until the first process exits (every
later call fails, frees included), so the worker sees that much less free memory; each worker
measures the machine's ceilings again before its first timing; warnings raised in a worker stay
in its log.

Plain Python, never imports pytest: the probe, the planted (simulated) error, the worker
processes and the hand-over that runs them (`run_in_workers`), a pytest process's side of it
(`State`: the test that killed the context, the hand-overs). What is done to a pytest report (the
killing failure explained, a worker's events taken in) is the glue's, `suite/worker_reports.py`, and
the plugin that calls pytest's hooks is `suite/isolation_plugin.py`.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from harness.host import signals
from harness.measure import device as devices
from harness.run.journal import WORKER_JOURNAL_ENV, Tail

PLANT_ENV = "SUITE_PLANT_STICKY_ERROR"  # newline-separated node IDs that simulate a sticky error
WORKER_NODEIDS_ENV = "SUITE_ISOLATION_NODEIDS"  # a worker's file of node IDs to run, one a line

# The text torch gives for a device-side assert (torch 2.11 on the H100, 1-checks-all.log), so the
# simulated error reads like the real one; the kernel's own line goes to stderr, as the driver's does.
SIMULATED_MESSAGE = (
    "CUDA error: device-side assert triggered\n"
    "Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
    "group__CUDART__TYPES.html for more information.\n"
    "(simulated sticky error planted by " + PLANT_ENV + ")"
)
SIMULATED_KERNEL_LINE = (
    "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:109: _assert_async_cuda_kernel: block: [0,0,0], "
    "thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."
)
_KERNEL_ASSERT = re.compile(r".*Assertion .* failed\.?\s*$")

INTERRUPT_GRACE_S = 60.0  # a worker told to stop writes its journal's last points, then exits
POLL_S = 0.05  # how often a worker's journal is read while it runs


def cuda_context_error() -> str | None:
    """None when this process's CUDA context works (or was never created), else the error text.

    A sticky error makes every CUDA call raise, so a one-element allocation and a synchronize
    are enough. Out of memory is not sticky (the next test may fit), so it does not count. Only
    the current device is probed: waking the others would create a context on each.
    """
    return devices.of("cuda").probe()


def synchronize_cuda() -> None:
    """Wait for this process's CUDA work, so an asynchronous error (a kernel's assert) is raised
    in the test that launched the kernel, not in whichever test makes the next CUDA call."""
    device = devices.of("cuda")
    if device.initialized():
        device.synchronize()


def simulated_error(message: str = SIMULATED_MESSAGE) -> Exception:
    return torch.AcceleratorError(message) if hasattr(torch, "AcceleratorError") else RuntimeError(message)


class Context:
    """The process's CUDA context as the isolation plugin sees it.

    `planted`: node IDs whose call raises a simulated sticky error, after which the context
    counts as dead for the rest of this process (every later test's call raises the same error,
    as every CUDA call would); `probe` is `cuda_context_error` unless a test injects another.
    """

    def __init__(self, planted=frozenset(), probe=cuda_context_error):
        self.planted = frozenset(planted)
        self.probe = probe
        self.simulated: str | None = None

    @classmethod
    def from_environ(cls, environ=os.environ) -> Context:
        return cls(n.strip() for n in environ.get(PLANT_ENV, "").splitlines() if n.strip())

    def before_call(self, nodeid: str) -> None:
        if self.simulated is None and nodeid in self.planted:
            print(SIMULATED_KERNEL_LINE, file=sys.stderr)
            self.simulated = SIMULATED_MESSAGE
        if self.simulated is not None:
            raise simulated_error(self.simulated)

    def after_call(self) -> None:
        synchronize_cuda()

    def error(self) -> str | None:
        """The sticky error that killed this process's context, or None while it is healthy."""
        return self.simulated or self.probe()


def kernel_assert_lines(*captured: str) -> list[str]:
    """The device-side assert's own text (``...cu:109: ... Assertion `...` failed.``), which the
    driver prints to stderr, from a test's captured output; torch's exception only says that an
    assert was triggered."""
    seen: list[str] = []
    for text in captured:
        for line in (text or "").splitlines():
            if _KERNEL_ASSERT.match(line) and line.strip() not in seen:
                seen.append(line.strip())
    return seen[:5]


# Options whose files a worker must not write: the first process writes the run's one JSON (and
# storage, junit XML, HTML) from everything it gathered, the worker's part included; and a worker
# with the first process's --basetemp would wipe that folder while the first process still uses it.
_DROP_WITH_VALUE = (
    "--benchmark-json",
    "--benchmark-save",
    "--junitxml",
    "--junit-xml",
    "--html",
    "--basetemp",
)
# Selections made from the cache were made once, by the first process: the node IDs a worker gets
# are their result, and a worker re-applying them would read a cache that earlier workers rewrote.
_DROP_FLAGS = (
    "--benchmark-autosave",
    "--lf",
    "--last-failed",
    "--ff",
    "--failed-first",
    "--nf",
    "--new-first",
    "--sw",
    "--stepwise",
    "--sw-skip",
    "--stepwise-skip",
    "--sw-reset",
    "--stepwise-reset",
    "--cache-clear",
)


def worker_args(args) -> list[str]:
    """The first process's pytest arguments for a worker: the same selection and options (so
    every item collects and runs as it would have), minus the outputs only the first one writes."""
    out, skip_next = [], False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = arg.split("=", 1)[0]
        if name in _DROP_WITH_VALUE:
            skip_next = "=" not in arg
            continue
        if name in _DROP_FLAGS:
            continue
        out.append(arg)
    return out


class Worker:
    """One ``python -m pytest`` worker process running `nodeids`, its events followed live."""

    def __init__(self, args, nodeids, *, cwd, folder: Path, index: int):
        self.folder = folder
        self.journal = folder / f"worker-{index}.journal.jsonl"
        self.log = folder / f"worker-{index}.log"
        ids = folder / f"worker-{index}.nodeids"
        ids.write_text("".join(n + "\n" for n in nodeids), encoding="utf-8")
        env = {
            **os.environ,
            WORKER_NODEIDS_ENV: str(ids),
            WORKER_JOURNAL_ENV: str(self.journal),
            "PYTHONUNBUFFERED": "1",
        }
        self.command = [sys.executable, "-m", "pytest", *worker_args(args)]
        self._tail = Tail(self.journal)
        with open(self.log, "wb") as log:
            # A session of its own: a Ctrl-C or `timeout -s INT` aimed at the group reaches the
            # first process only, which passes it on once (`interrupt`); a second SIGINT would
            # cut the worker's own clean finish short.
            self.proc = subprocess.Popen(
                self.command,
                cwd=cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def events(self) -> list[dict]:
        return self._tail.read()

    @property
    def returncode(self) -> int | None:
        return signals.poll(self.proc)

    def interrupt(self, grace_s: float = INTERRUPT_GRACE_S) -> None:
        """Stop the worker as this process was stopped; SIGKILL if it has not exited in `grace_s`.

        SIGTERM rather than SIGINT: the worker finishes the same way (`harness.host.signals.Interrupts`),
        and a run started in the background by a shell without job control has SIGINT ignored,
        which the worker would inherit."""
        if signals.poll(self.proc) is None:
            signals.send(self.proc, signal.SIGTERM)
        try:
            signals.wait(self.proc, grace_s)
        except subprocess.TimeoutExpired:
            signals.send(self.proc, signal.SIGKILL)
            signals.wait(self.proc)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return text[-chars:]


def worker_nodeids(environ=os.environ) -> list[str] | None:
    """In a worker: the node IDs its `Worker` was started to run (the variable is taken out of the
    environment, so nothing the worker starts inherits it); None in any other process."""
    ids_file = environ.pop(WORKER_NODEIDS_ENV, None)
    return Path(ids_file).read_text(encoding="utf-8").splitlines() if ids_file else None


def enabled(no_isolation: bool, debugging: bool, environ=os.environ) -> bool:
    """Whether the tests after a sticky error go to a worker. ``--no-isolation`` keeps every test
    in the first process (later CUDA tests then fail with the same error); so does ``--pdb`` (a
    worker has no terminal to debug in) and a pytest-xdist worker (its arguments are the
    controller's, and pytest-benchmark is off under xdist anyway)."""
    return not (no_isolation or debugging or environ.get("PYTEST_XDIST_WORKER"))


def partition(items: list, nodeids) -> tuple[list, list]:
    """A worker's collected items (anything with a ``nodeid``): those it was started to run, in
    collection order, and the rest, which it deselects."""
    wanted = set(nodeids)
    kept = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    return kept, dropped


def watch_parent(interval_s: float = 1.0) -> None:
    """In a worker: SIGTERM to itself when the process that started it is gone (killed hard), so
    the worker finishes cleanly instead of holding the GPU as an orphan; its own session keeps
    the group kill that ended the parent from reaching it."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="isolation-parent-watch", daemon=True).start()


def release_device_memory() -> None:
    """Best effort: give back what the dead context still caches. A sticky error usually makes
    the frees fail too, and the memory stays held until this process exits; the worker then
    sees that much less free memory (a limit of running on while the first process waits)."""
    gc.collect()
    device = devices.of("cuda")
    if device.initialized():
        try:
            device.release_cached()
        except RuntimeError:
            pass


def dead_context_note(error: str, kernel_lines: list[str], isolated: bool) -> str:
    """What a failed test's report says about the dead context, and what happens to the tests after it."""
    after = (
        "the tests after this one run in a fresh worker process (suite.isolation)"
        if isolated
        else "isolation is off here, so the CUDA tests after this one fail with the same error"
    )
    return "\n".join([error, *kernel_lines, f"The CUDA context of this process is dead: {after}."])


def hand_over(nodeid: str, error: str, tests: int) -> dict:
    """The record of one hand-over (``suite.isolation`` in the results JSON); `workers` counts up
    as they start."""
    first_line = error.strip().splitlines()[0] if error.strip() else error
    return {"after": nodeid, "error": first_line, "tests": tests, "workers": 0}


def hand_over_line(h: dict) -> str:
    return (
        f"after {h['after']}: {h['error']}; {h['tests']} tests ran in {h['workers']} fresh worker process(es)"
    )


def handing_over_line(h: dict) -> str:
    """What the terminal says as a hand-over starts."""
    return (
        f"sticky CUDA error in {h['after']} ({h['error']}): the {h['tests']} tests after it run "
        f"in a fresh worker process"
    )


def hand_over_event(h: dict) -> dict:
    """A hand-over as a worker's journal carries it: one made in a worker is passed up to the
    first process, which lists it with its own."""
    return {"kind": "hand_over", "hand_over": h}


@dataclass
class Followed:
    """What one worker has reported so far."""

    started: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    phases: dict[str, set[str]] = field(default_factory=dict)
    running: str | None = None
    # Read from the worker's journal, not yet replayed: an interrupt in the middle of a batch
    # must not drop the rest of it.
    queue: deque = field(default_factory=deque)

    def see(self, event: dict) -> None:
        kind = event.get("kind")
        if kind == "logstart":
            self.started.add(event["nodeid"])
            self.running = event["nodeid"]
        elif kind == "report":
            self.phases.setdefault(event["report"]["nodeid"], set()).add(event["report"]["when"])
        elif kind == "logfinish":
            self.finished.add(event["nodeid"])
            self.running = None


# replay(event): one event of a worker (a test event, a benchmark point, a later hand-over) taken in
# as this process's own; fail(nodeid, message, started, when): a test reported failed for a reason
# outside it (its worker died); stopped(): the session stops (-x, --maxfail, an interrupt).
Replay = Callable[[dict], None]
Fail = Callable[[str, str, bool, str], None]


def run_in_workers(args, nodeids, *, cwd, record: dict, replay: Replay, fail: Fail, stopped) -> None:
    """Run `nodeids` in fresh worker processes, one after another while one dies, until each has
    run or the session stops; `record` (a `hand_over`) counts the workers. The workers' folder
    (node IDs, journals, logs) is kept where one crashed: the failures name its logs."""
    folder = Path(tempfile.mkdtemp(prefix="suite-isolation-"))
    remaining, crashed = list(nodeids), False
    try:
        while remaining and not stopped():
            record["workers"] += 1
            remaining, died = _one_worker(
                args, record["workers"], remaining, cwd, folder, replay, fail, stopped
            )
            crashed = crashed or died
    finally:
        if not crashed:
            shutil.rmtree(folder, ignore_errors=True)


def _one_worker(args, index, remaining, cwd, folder, replay, fail, stopped) -> tuple[list, bool]:
    """Run `remaining` in one worker; the node IDs it did not get to, and whether it died."""
    followed = Followed()
    try:
        worker = Worker(args, remaining, cwd=cwd, folder=folder, index=index)
    except OSError as exc:
        for nodeid in remaining:
            _fail(fail, nodeid, followed, f"the isolation worker could not start: {exc}")
        return [], True
    try:
        _follow(worker, followed, replay, stopped)
    except KeyboardInterrupt:
        worker.interrupt()  # it journals what it finished; this process then stops as interrupted
        _drain(worker, followed, replay)
        raise
    remaining = [n for n in remaining if n not in followed.finished]
    why = f"the isolation worker exited with status {worker.returncode}"
    log = f"its log ({worker.log}) ends with:\n{worker.log_tail()}"
    if followed.running is not None:  # it died inside this test; the next worker takes the rest
        dead = followed.running
        _fail(fail, dead, followed, f"{why} while running this test; {log}")
        return [n for n in remaining if n != dead], True
    if remaining and not followed.started and not stopped():
        for nodeid in remaining:  # no progress: another worker would do the same
            _fail(fail, nodeid, followed, f"{why} without running this test; {log}")
        return [], True
    return remaining, False


def _follow(worker, followed, replay, stopped) -> None:
    while True:
        exited = worker.returncode is not None
        _drain(worker, followed, replay)
        if exited:
            return
        if stopped():  # -x / --maxfail counted a worker's failure
            worker.interrupt()
            _drain(worker, followed, replay)
            return
        time.sleep(POLL_S)


def _drain(worker, followed, replay) -> None:
    # Read and queued under one hold: the journal's offset moves past what a read returns, so an
    # interrupt between the read and the queue would drop all of it (seen in the test command: an
    # interrupted run kept none of its worker's points).
    with signals.held():
        followed.queue.extend(worker.events())
    while followed.queue:
        # An interrupt between taking an event from the queue and replaying it whole would drop it
        # (seen under load: a point the worker finished missing from the JSON, the points after it
        # kept): it is held until the event is taken in, then raised.
        with signals.held():
            event = followed.queue.popleft()
            followed.see(event)
            replay(event)


def _fail(fail: Fail, nodeid: str, followed: Followed, message: str) -> None:
    when = "teardown" if "call" in followed.phases.get(nodeid, ()) else "call"
    fail(nodeid, message, nodeid in followed.started, when)
    followed.finished.add(nodeid)
    followed.running = None


class State:
    """One pytest process's side of isolation: its CUDA context, the test that left it dead, the
    node IDs handed to workers, and every hand-over (``suite.isolation`` in the results JSON), this
    process's own and, passed up, its workers'. `journal(event)` writes an event for the process
    that started this one, when there is one."""

    def __init__(self, context: Context, enabled: bool, journal: Callable[[dict], None]):
        self.context = context
        self.enabled = enabled
        self.journal = journal
        self.dead: tuple[str, str] | None = None  # (node ID, error) once the context is dead
        self.handed_over: set[str] = set()
        self.hand_overs: list[dict] = []

    def failed(self, nodeid: str) -> str | None:
        """A phase of `nodeid` failed: if the context is dead, this test killed it, and the error is
        returned for its report to say so (suite.worker_reports.explain). Only the first counts:
        every later failure finds it dead too (None)."""
        if self.dead is None:
            error = self.context.error()
            if error is not None:
                self.dead = (nodeid, error)
                return error
        return None

    @property
    def handing_over(self) -> bool:
        """Whether the tests still to run go to a worker instead of this process's dead context."""
        return self.dead is not None and self.enabled

    def hand_over_rest(self, args, nodeids, *, cwd, say, replay: Replay, fail: Fail, stopped) -> None:
        """Run `nodeids`, the rest of the run, in workers (`run_in_workers`); `say(line)` tells the
        terminal."""
        self.handed_over.update(nodeids)
        nodeid, error = self.dead
        record = hand_over(nodeid, error, len(nodeids))
        say(handing_over_line(record))
        release_device_memory()
        self.hand_overs.append(record)  # before the workers' own, which arrive while they run
        try:
            run_in_workers(args, nodeids, cwd=cwd, record=record, replay=replay, fail=fail, stopped=stopped)
        finally:
            self.journal(hand_over_event(record))

    def passed_up(self, record: dict) -> None:
        """A hand-over made in a worker of this process: listed here, and passed up in turn."""
        self.hand_overs.append(record)
        self.journal(hand_over_event(record))
