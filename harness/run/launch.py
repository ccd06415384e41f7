"""Launch a distributed worker with `torchrun` as a subprocess, and never leave a process behind.

Why not `subprocess.run(timeout=...)`: torchrun starts its workers in *new sessions*
(torch.distributed.elastic's SubprocessHandler uses ``start_new_session``), so killing torchrun's
process group on a timeout misses the ranks, which stay blocked in a collective forever. Here
every descendant is tracked by PID (and start time, against PID reuse) while the launch runs;
on a timeout torchrun gets SIGTERM (it forwards it to the ranks), then after a grace period
every tracked process still alive gets SIGKILL, by PID. `Launch.survivors()` re-checks them, so a
test can prove nothing is left.

The tracking needs this process alive. If it is killed outright (SIGKILL, the OOM killer) nothing
runs here any more, so each launched process asks the kernel to kill it when its parent dies
(Linux's PR_SET_PDEATHSIG): torchrun when the launching process dies (`dying_with_this_process`, in
the child before it becomes torchrun), and each rank, which calls `die_with_parent` first thing,
when torchrun dies. Their ports go with them.

All output goes to files, not pipes (a full pipe would block a chatty rank), and is kept in the
result whether the launch succeeded or not; ``--tee 3`` prefixes every line with its rank. A
launch that failed, or left a process behind, raises `LaunchFailed` with every rank's output where
its files are read (`Launch.require_ok`).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.host import processes, signals

GRACE_S = 5.0  # between SIGTERM to torchrun and SIGKILL to whatever is left
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class LaunchFailed(Exception):
    """A launch exited non-zero, timed out or left processes behind: its message holds every
    rank's output, so the reader sees why without rerunning it."""


def world_sizes(device: str) -> list[int]:
    """The world sizes to launch on `device`: ``SUITE_WORLD_SIZES`` (e.g. "1,2,4") when set, else
    1..N on N GPUs (1 where none is visible) and 1, 2 and 4 gloo processes on CPU."""
    env = os.environ.get("SUITE_WORLD_SIZES")
    if env:
        return [int(w) for w in env.split(",") if w.strip()]
    if device == "cuda":
        from harness.machine.premises import gpu_count

        return list(range(1, max(gpu_count(), 1) + 1))
    return [1, 2, 4]


def die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; False elsewhere). Also
    exits at once if the parent is already gone (it died before the request was made)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if parent == 1:  # reparented to init: the launcher is gone already
        os._exit(1)
    return ok


# The child's first steps, in a Python of its own: ask for PR_SET_PDEATHSIG, exit if the launcher
# is already gone, then become the command (exec keeps the PID and the request). Not a
# `preexec_fn`: that runs Python between fork and exec, which can deadlock on a lock another thread
# held at the fork (an import, the allocator), and launches are started from threads
# (harness.run.ahead). Costs one bare interpreter start (-S: no site): 36 ms a launch on the
# 2-core EPYC (median of 20), beside torchrun's own ~4.5 s.
_EXEC_DYING_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    f"ctypes.CDLL(None, use_errno=True).prctl({_PR_SET_PDEATHSIG}, signal.SIGKILL, 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    os._exit(1)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def dying_with_this_process(cmd: list[str]) -> list[str]:
    """`cmd` started so that the kernel kills it when this process dies (Linux; as is elsewhere)."""
    if not sys.platform.startswith("linux"):
        return list(cmd)
    return [sys.executable, "-S", "-c", _EXEC_DYING_WITH_PARENT, str(os.getpid()), *cmd]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# Ports handed out by `free_port` in this process, and when: a port is bound by torchrun only
# after the probe socket that found it is closed, and in that window the kernel can give the same
# port to the next probe (seen: `dist.setup`'s check of two launches at once got one port for both,
# and the second torchrun joined the first's rendezvous). Launches started ahead probe from several
# threads at once.
_HANDED_OUT: dict[int, float] = {}
_HANDED_OUT_LOCK = threading.Lock()
HOLD_S = 120.0  # a launch binds its port within seconds of asking; none waits this long to start


def _kernel_port(host: str) -> int:
    """A port the kernel says is free now (bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_port(host: str = "127.0.0.1", preferred: int | None = None) -> int:
    """`preferred` when it can be bound, else a port the kernel says is free; never a port this
    process handed out in the last `HOLD_S` seconds (see `_HANDED_OUT`)."""
    with _HANDED_OUT_LOCK:
        now = time.monotonic()
        for port, when in list(_HANDED_OUT.items()):
            if now - when > HOLD_S:
                del _HANDED_OUT[port]
        preferred_free = preferred is not None and port_is_free(preferred, host)
        candidates = itertools.chain(
            [preferred] if preferred_free else [], (_kernel_port(host) for _ in range(64))
        )
        port = next((p for p in candidates if p not in _HANDED_OUT), None)
        if port is None:
            raise OSError(f"no free port on {host} that this process has not handed out already")
        _HANDED_OUT[port] = now
        return port


def torchrun_command(
    module: str,
    args: list[str],
    *,
    nproc: int,
    port: int,
    log_dir: Path,
    nnodes: int = 1,
    node_rank: int = 0,
    rdzv_id: str = "suite",
) -> list[str]:
    """`python -m torch.distributed.run` (torchrun without relying on PATH: the same interpreter
    and environment as the tests) with c10d rendezvous on 127.0.0.1:`port`, its agent's logs under
    `log_dir` (the launch's own folder): without ``--log-dir`` torchrun makes a ``torchelastic_*``
    folder in the system's temp folder and never removes it, one a launch (1,374 of them in /tmp
    after a day of runs)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nnodes={nnodes}",
        f"--nproc-per-node={nproc}",
        f"--node-rank={node_rank}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}",
        f"--rdzv-id={rdzv_id}",
        "--max-restarts=0",
        "--monitor-interval=0.1",
        "--tee=3",
        f"--log-dir={log_dir}",
        "-m",
        module,
        *args,
    ]


def _start_ticks(pid: int) -> int | None:
    """A live process's start time (clock ticks since boot), or None where it is gone or a zombie
    (it has exited; only its parent's wait is missing)."""
    p = processes.read(pid)
    return p.start_ticks if p is not None and p.state != "Z" else None


def _descendants(roots: set[int]) -> dict[int, int]:
    """PID → start time of every live process below `roots`."""
    live = {pid: p for pid, p in processes.table().items() if p.state != "Z"}
    return {pid: live[pid].start_ticks for pid in processes.below(roots, live)}


@dataclass
class Launch:
    """What one launch (one or several torchrun commands run together) left behind."""

    commands: list[list[str]]
    returncodes: list[int | None]
    timed_out: bool
    wall_s: float
    out_dir: Path
    logs: list[str]
    port: int
    tracked: dict[int, int] = field(default_factory=dict)  # every PID seen, with its start time

    @property
    def ok(self) -> bool:
        return not self.timed_out and all(rc == 0 for rc in self.returncodes)

    @property
    def output(self) -> str:
        return "\n".join(self.logs)

    def results(self, prefix: str = "") -> list[dict]:
        """The per-rank JSON files the workers wrote, ordered by rank."""
        files = sorted(self.out_dir.glob(f"{prefix}*rank*.json"))
        rows = [json.loads(f.read_text()) for f in files]
        return sorted(rows, key=lambda r: r.get("rank", 0))

    def survivors(self, grace_s: float = 5.0) -> list[int]:
        """Tracked PIDs still the same live process after `grace_s` (a reused PID does not count).

        The grace period matters: helpers such as multiprocessing's resource tracker exit a moment
        after the ranks do, and a check made at once would call them left behind.
        """
        deadline = time.monotonic() + grace_s
        while True:
            alive = [pid for pid, start in self.tracked.items() if _start_ticks(pid) == start]
            if not alive or time.monotonic() >= deadline:
                return alive
            time.sleep(0.1)

    def describe(self) -> str:
        state = "timed out" if self.timed_out else f"exit codes {self.returncodes}"
        return f"{state} after {self.wall_s:.1f} s (port {self.port}); output:\n{self.output[-12000:]}"

    def require_ok(self, what: str) -> Launch:
        """This launch, when it succeeded and left nothing behind; else `LaunchFailed`."""
        if not self.ok:
            raise LaunchFailed(f"{what}: {self.describe()}")
        left = self.survivors()
        if left:
            raise LaunchFailed(f"{what}: processes left behind: {left}")
        return self


def run(
    commands: list[list[str]],
    *,
    out_dir: Path,
    timeout_s: float,
    port: int = 0,
    env: dict[str, str] | None = None,
) -> Launch:
    """Run `commands` concurrently (one per simulated node) until all exit or `timeout_s` passes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    # One thread per rank: ranks share the cores, and the single-process baseline gets the same
    # per-process budget, so scaling numbers compare like with like.
    full_env.setdefault("OMP_NUM_THREADS", "1")
    full_env["PYTHONUNBUFFERED"] = "1"
    # The workers are `-m cases....` modules: the repository root must be importable in them
    # whether or not the package is installed.
    root = str(Path(__file__).resolve().parents[2])
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (root, full_env.get("PYTHONPATH", "")) if p)
    logs_dir = Path(tempfile.mkdtemp(prefix="launch-logs-", dir=out_dir))
    procs, files, tracked = [], [], {}
    start = time.perf_counter()
    try:
        for i, cmd in enumerate(commands):
            log = open(logs_dir / f"node{i}.log", "w+b")
            files.append(log)
            procs.append(
                subprocess.Popen(
                    dying_with_this_process(cmd),  # torchrun dies with this process, even on SIGKILL
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=full_env,
                    start_new_session=True,
                )
            )
            tracked[procs[-1].pid] = _start_ticks(procs[-1].pid) or 0
        deadline = start + timeout_s
        timed_out = False
        while any(signals.poll(p) is None for p in procs):
            tracked.update(_descendants({p.pid for p in procs}))
            if time.perf_counter() > deadline:
                timed_out = True
                break
            time.sleep(0.1)
        if timed_out:
            _terminate(procs, tracked)
        else:
            # torchrun has exited; a rank it failed to reap would still be listed here.
            _kill_tracked(tracked)
        wall = time.perf_counter() - start
        logs = []
        for i, log in enumerate(files):
            log.seek(0)
            logs.append(f"--- node {i}: {' '.join(commands[i][3:])}\n" + log.read().decode(errors="replace"))
    finally:
        for p in procs:
            if signals.poll(p) is None:
                signals.send(p, signal.SIGKILL)
                signals.wait(p)
        for log in files:
            log.close()
    return Launch(commands, [p.returncode for p in procs], timed_out, wall, out_dir, logs, port, tracked)


def _terminate(procs, tracked) -> None:
    for p in procs:
        if signals.poll(p) is None:
            signals.send(p, signal.SIGTERM)  # torchrun forwards SIGTERM to its ranks
    end = time.perf_counter() + GRACE_S
    while time.perf_counter() < end and any(signals.poll(p) is None for p in procs):
        time.sleep(0.1)
    _kill_tracked(tracked)
    for p in procs:
        if signals.poll(p) is None:
            signals.send(p, signal.SIGKILL)
        signals.wait(p)


def _kill_tracked(tracked: dict[int, int]) -> None:
    for pid, start in tracked.items():
        if _start_ticks(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def torchrun(
    module: str,
    args: list[str],
    *,
    nproc: int,
    out_dir: Path,
    timeout_s: float = 120.0,
    port: int | None = None,
    nnodes: int = 1,
    env: dict[str, str] | None = None,
) -> Launch:
    """Run `module` under torchrun with `nproc` ranks per node on `nnodes` simulated nodes (all on
    127.0.0.1, one torchrun per node, as on a real cluster). `port`: the preferred rendezvous
    port; when it is taken another free one is used (see `Launch.port`)."""
    chosen = free_port(preferred=port)
    commands = [
        torchrun_command(
            module,
            [*args, "--out", str(out_dir)],
            nproc=nproc,
            port=chosen,
            log_dir=out_dir / "torchelastic",
            nnodes=nnodes,
            node_rank=n,
            rdzv_id=f"suite-{chosen}",
        )
        for n in range(nnodes)
    ]
    return run(commands, out_dir=out_dir, timeout_s=timeout_s, port=chosen, env=env)


def legacy_launch(module: str, args: list[str], *, nproc: int, out_dir: Path, timeout_s: float) -> Launch:
    """Run `module` under ``python -m torch.distributed.launch`` (deprecated since torch 2.0, the
    launcher the notes use: it hands each rank ``--local-rank=R`` on its command line)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.launch",
        f"--nproc-per-node={nproc}",
        f"--master-port={port}",
        f"--log-dir={out_dir / 'torchelastic'}",  # its agent's, as torchrun_command's
        "-m",
        module,
        *args,
        "--out",
        str(out_dir),
    ]
    return run([cmd], out_dir=out_dir, timeout_s=timeout_s, port=port)


def python_module(
    module: str,
    args: list[str],
    *,
    out_dir: Path,
    timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
) -> Launch:
    """Run ``python -m module args --out out_dir`` (a script that starts its own processes, e.g.
    with `mp.spawn`) under the same timeout and clean-up."""
    cmd = [sys.executable, "-u", "-m", module, *args, "--out", str(out_dir)]
    return run([cmd], out_dir=out_dir, timeout_s=timeout_s, env=env)
