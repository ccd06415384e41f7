"""A variant's time with every large temporary's pages faulted on each call: the other end of
what a default program sees, timed by `torch.utils.benchmark` in a fresh process.

The suite times with the host allocator pinned (`harness.host.allocator`): a settled heap, every
block under 32 MiB reused, the same figure whatever ran before. A user's program starts with
glibc's defaults, whose thresholds adapt to what it freed, so a computation with large temporaries
costs what the trivia of its own heap made of them. Measured in fresh processes (2-core Xeon
with AVX-512 and AMX, torch 2.13.0+cpu, 2026-11-27): `distance.pairwise`'s broadcast at n = 128
took 9.5-10.0 ms a call under `adaptive_autorange` and 1.40 ms under `blocked_autorange`, the same
call on the same inputs with glibc's defaults (its two 16 MiB temporaries trimmed from the heap
and faulted back on every call, or not, as the timer's own small allocations fell), against
1.38 ms settled and 8.6-10.0 ms here; the manual LayerNorm at d = 2048 14.4 or 22.5-23.3 ms from
one default process to the next (settled 14.8, here 27.5-31.8). So the report shows two states,
named (`record.SETTLED_HEAP`, the suite's median; `record.FAULTED_PAGES`, timed here):
glibc's initial mmap threshold of 128 KiB held, every block from 128 KiB that the heap has no
free room for mapped fresh and unmapped when freed. A default program's figure mostly lies
between them; neither is exact for it. Nor is this one history-free: a block just over 128 KiB
can come from room an earlier computation left in the heap (matmul at n = 128: 0.22-0.24 ms a
call here and in a fresh interpreter that computed the float64 oracle first, 0.076-0.079 ms in
one that did not), and one fresh process differs from the next by up to ~15% where pages are
faulted (the library LayerNorm at d = 512: 1.20-1.25 ms in one, 1.35-1.41 ms in another).

How: a `multiprocessing` forkserver is started once with ``GLIBC_TUNABLES`` set to that state
(`allocator.FAULTED_TUNABLES`; it is exec'd, so this process's pinned mallopt settings do not
carry over) and torch imported; each figure forks a new child of it, which builds the computation
(`build(*args)`, a picklable function returning the bare call and its block context), enters the
context and times the call with ``Timer.blocked_autorange``. A fork of a process that has only
imported costs ~10 ms where a new interpreter costs ~1 s of imports; the heap it inherits holds
only the imports' blocks, the same in every child (the server's imports are those of the first
figure's builder: a later builder from another module is imported in each of its children). A
child checks the tunables it has, so a forkserver started some other way gives an error, not a
figure in the wrong state. The forkserver is this process's: another user
of multiprocessing's forkserver here would get children in this state; and each child imports the
parent's main module, as multiprocessing's children do, so a main script must keep its work (and
any `allocator.pin()`) under ``if __name__ == "__main__"`` (pytest's own is). Plain Python and
torch: no pytest, no cases, no plan (the caller's `build` knows how to make a point).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
from typing import Any, Callable

from harness.contract import record
from harness.host import allocator, load

PRELOAD = ["torch", "torch.utils.benchmark"]
# blocked_autorange: blocks of calls long enough for its timer's overhead to be 1e-4 of a block,
# for at least MIN_RUN_S of timed calls; the median of the blocks' per-call means. Not
# adaptive_autorange: where four blocks' IQR stays over 10% of their median (matmul at n = 128
# here) it keeps going, and its stop test re-sorts every block so far after each one (11 s of wall
# time for 1 s of timed calls, measured); a fixed run time costs the same on every point.
MIN_RUN_S = 0.1
TIMEOUT_S = 60.0  # a child's whole life: the fork, its inputs, the warm-up and the timing
# Which cases' CPU points are also timed so (`--faulted-pages`): in the quick profile the two
# whose temporaries cross glibc's thresholds (figures above), ~0.15 s a point (1.3 s for the
# broadcast at n = 1024, whose calls take 0.56 s).
REPRESENTATIVE = ("distance.pairwise", "layernorm.manual")
SCOPE_CASES = {"all": None, "representative": REPRESENTATIVE, "none": ()}
SCOPES = ("auto", *SCOPE_CASES)


def cases_in(scope: str, profile: str) -> tuple[str, ...] | None:
    """The cases whose CPU points are also timed with pages faulted under `scope`: None for every
    case."""
    if scope == "auto":
        scope = "all" if profile == "full" else "representative"
    return SCOPE_CASES[scope]


@contextlib.contextmanager
def _glibc_tunables(value: str):
    saved = os.environ.get("GLIBC_TUNABLES")
    os.environ["GLIBC_TUNABLES"] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("GLIBC_TUNABLES", None)
        else:
            os.environ["GLIBC_TUNABLES"] = saved


_context = None


def _forkserver(preload: list[str]):
    """The forkserver context, its server started on first use with `preload` imported and the
    faulted state's tunables in its environment."""
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD + preload)
        with _glibc_tunables(allocator.environment_with(allocator.FAULTED_TUNABLES)):
            multiprocessing.forkserver.ensure_running()
        _context = context
    return _context


def _child(conn, build, args, threads: int) -> None:
    try:
        import torch
        from torch.utils import benchmark

        # The state as this child has it, not as asked: a forkserver someone else started first,
        # or one restarted after it died, would run without the tunables.
        tunables = os.environ.get("GLIBC_TUNABLES", "")
        if allocator.FAULTED_TUNABLES not in tunables.split(":"):
            raise RuntimeError(f"not in the faulted state: the forkserver's GLIBC_TUNABLES is {tunables!r}")
        torch.set_num_threads(threads)
        call, block_context = build(*args)
        with block_context():
            timer = benchmark.Timer(stmt="call()", globals={"call": call}, num_threads=threads)
            measured = timer.blocked_autorange(min_run_time=MIN_RUN_S)
        conn.send(
            {
                "median_s": measured.median,
                "iqr_s": measured.iqr,
                "blocks": len(measured.times),
                "calls": measured.number_per_run * len(measured.times),
                "state": record.FAULTED_PAGES,
                "tunables": tunables,
            }
        )
    except BaseException as exc:  # the parent records why; the child's exit code alone would not say
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def figure(build: Callable[..., tuple[Callable[[], Any], Callable]], *args, threads: int) -> dict:
    """Time ``build(*args)``'s call in a fresh child of the faulted-pages forkserver with `threads`
    intra-op threads: {"median_s", "iqr_s", "blocks", "calls", "state", "tunables", "busy"}, or
    {"error": why} where it raised, died or ran past TIMEOUT_S (the child is killed). "busy": why
    the load probe found the machine too busy while the child ran ("" when quiet; the child's time
    counts as this process tree's own), so a reader can leave that figure out."""
    with load.stretch() as over:
        found = _in_child(build, args, threads)
    if "median_s" in found:
        found["busy"] = (over.load.busy_reason() if over.load is not None else None) or ""
    return found


def _in_child(build, args, threads: int) -> dict:
    context = _forkserver([build.__module__])  # the builder's imports, made once
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, build, args, threads), daemon=True)
    try:
        child.start()
        send.close()
        if not receive.poll(TIMEOUT_S):
            return {"error": f"no figure within {TIMEOUT_S:.0f} s; the child was killed"}
        try:
            return receive.recv()
        except EOFError:
            child.join(5)
            return {"error": f"the child died without a figure (exit code {child.exitcode})"}
        except Exception as exc:  # a figure that did not arrive whole is no figure; the run goes on
            return {"error": f"the child's figure could not be read: {type(exc).__name__}: {exc}"}
    finally:
        send.close()
        receive.close()
        if child.pid is not None:  # started
            if child.is_alive():
                child.kill()
            child.join()
