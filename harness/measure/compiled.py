"""torch.compile of a case's naive variant: does the compiler close the gap the notes' trick closes?

A `Compiled` wraps the naive callable. Its first call on a point (`compile_and_time`) starts from
an empty Dynamo cache, so the compile time it measures is that point's own (not a cache hit from
an earlier size), and is kept apart from steady state: the suite's warm-up, peak-memory pass and
timed rounds all come after it. Graph breaks are counted from Dynamo's own counters.

Where torch.compile cannot run (no C++ compiler for Inductor's CPU code, no Triton for its GPU
kernels, a Python Dynamo does not support) the compiled variants' ``compiler`` requirement skips
them with the reason (harness.machine.premises); a compile that raises is recorded the same way, per variant.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from harness.measure import device as harness_device

DEFAULT = "default"
MAX_AUTOTUNE = "max-autotune-no-cudagraphs"  # CUDA, full profile: Triton autotuning, no graph replay

# The pairs compiled in the quick profile (2 CPU cores: each compile costs seconds), one per kind
# of question: can Inductor fuse away a broadcast's (N, M, D) intermediate, reach the library's
# fused LayerNorm from the notes' hand-written one, and unroll a per-time-step Python loop.
QUICK_CASES = ("distance.pairwise", "layernorm.manual", "rnn.timestep_loop")
# What each `--compiled` scope compiles (None: every case); "auto" is one of them by profile.
SCOPE_CASES = {"all": None, "representative": QUICK_CASES, "none": ()}
COMPILE_SCOPES = ("auto", *SCOPE_CASES)


class Compiled:
    """``torch.compile(fn, mode=mode)``, compiled afresh on each point's first call.

    A callable that sets state around the computation (cases._lib.precision.ieee_fp32) names the
    function to compile (``__compile_target__``) and the decorator to keep around the compiled
    one (``__compile_wrapper__``): the state is then set outside the graph, as the eager variant
    sets it outside its kernels. A variant that is a whole training step says which part a user
    would compile: ``__compile__(compile_fn)`` returns the step with that part compiled
    (cases.precision.amp compiles the model's forward, not the optimizer's construction)."""

    def __init__(self, fn: Callable[..., Any], mode: str = DEFAULT):
        self.fn = fn
        self.mode = mode
        self._compiled = None
        self._bare = None  # the compiled computation without the wrapper's flags
        self.__name__ = f"compiled({getattr(fn, '__name__', 'fn')}, {mode})"
        # Flags set around the computation (harness.measure.block_context.scoped) stay outside the timed
        # calls, as the eager variant's do: the harness enters them once around its rounds.
        if getattr(fn, "block_context", None) is not None:
            self.block_context = fn.block_context
            self.block_bare = self._call_bare

    def _compile(self):
        mode = None if self.mode == DEFAULT else self.mode
        custom = getattr(self.fn, "__compile__", None)
        if custom is not None:  # the variant says which part of it a user would compile
            return custom(lambda f: torch.compile(f, mode=mode))
        target = getattr(self.fn, "__compile_target__", self.fn)
        wrap = getattr(self.fn, "__compile_wrapper__", None)
        compiled = torch.compile(target, mode=mode)
        self._bare = compiled
        return wrap(compiled) if wrap else compiled

    def compile_and_time(self, *inputs) -> tuple[Any, float, int]:
        """(first output, compile seconds, graph breaks) for these inputs. The seconds are the
        first call's wall time, device-synchronized: tracing, Inductor codegen and the C++/Triton
        builds, plus one run of the code, which is small beside them."""
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        self._compiled = self._compile()
        devices = {t.device for t in inputs if isinstance(t, torch.Tensor) and t.device.type == "cuda"}
        start = time.perf_counter()
        with _compile_config(cold=True):
            out = self._compiled(*inputs)
        for device in devices:
            harness_device.of(device).synchronize()
        seconds = time.perf_counter() - start
        breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
        return out, seconds, breaks

    def __call__(self, *inputs):
        if self._compiled is None:  # compiled on this first call: with eager's random draws
            self._compiled = self._compile()
            with _compile_config(cold=False):
                return self._compiled(*inputs)
        return self._compiled(*inputs)

    def _call_bare(self, *inputs):
        """The compiled computation alone, inside flags the caller entered (`block_context`)."""
        if self._compiled is None:
            self._compiled = self._compile()
            with _compile_config(cold=False):
                return self._bare(*inputs)
        return self._bare(*inputs)


def _compile_config(cold: bool):
    """Inductor's config while it compiles (read at compile time only).

    Random ops (dropout) draw from eager's generator, so a seeded compiled variant draws the masks
    the eager variants and the float64 oracle draw, and can be checked like them (Inductor's own
    Philox stream would give other masks: a compiled MLP step with dropout came out 77% off the
    oracle). ``cold``: no compile cache, on disk or in memory, so the compile time is the point's
    own (a cache left by an earlier run made a compile look like 0.1 s)."""
    return torch._inductor.config.patch(fallback_random=True, force_disable_caches=cold)


def short_reason(exc: BaseException) -> str:
    """One line of a compile failure: the exception's class and the first line of its message."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]


def compiled_cases(scope: str, profile: str) -> tuple[str, ...] | None:
    """The cases whose pairs get compiled variants under `--compiled scope`: None for every case."""
    if scope == "auto":
        scope = "all" if profile == "full" else "representative"
    return SCOPE_CASES[scope]
