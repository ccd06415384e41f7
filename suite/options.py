"""The suite's command-line options, read in one place (never at import time)."""

from __future__ import annotations

import os

import pytest

from cases.spec import PROFILES
from harness.timing import TIMING_MODES

DEVICES = ("cpu", "cuda")
MAX_THREADS_PER_CORE = 4  # torch.set_num_threads(100000) segfaulted; a few per core is already too many
COMPILE_SCOPES = ("auto", "all", "representative", "none")


def add_options(parser) -> None:
    group = parser.getgroup("suite", "PyTorch technique suite")
    group.addoption(
        "--profile",
        choices=PROFILES,
        default="quick",
        help="sizes to run: quick (CI, seconds per case) or full (fills a GPU). Default: quick.",
    )
    group.addoption(
        "--device",
        default=None,
        help="comma-separated devices among cpu,cuda. Default: the devices present (cpu, and cuda "
        "where torch sees a GPU); a device named but absent is skipped with the reason.",
    )
    group.addoption("--seed", type=int, default=0, help="seed for every case's inputs. Default: 0.")
    group.addoption(
        "--results",
        default=None,
        metavar="PATH",
        help="write the results JSON here, atomically: into a temporary file renamed into place when "
        "the run ends, so the previous file survives a run that dies, and a run of checks only still "
        "writes its outcomes. (pytest-benchmark's --benchmark-json truncates its file when the "
        "options are read.)",
    )
    group.addoption(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads for the run (torch.set_num_threads), recorded in the machine info. "
        "Default: torch's own choice. On shared CPU machines 1 gives steadier timings.",
    )
    group.addoption(
        "--benchmark-tables",
        action="store_true",
        default=False,
        help="also print pytest-benchmark's per-test tables at the end (by default the run ends with "
        "the suite's own summary: gains, noise, findings, where the results went)",
    )
    group.addoption(
        "--time-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fit the run in about this many seconds by capping each point's timed rounds below "
        "--benchmark-max-time (checks are never trimmed); the end of the run says what was trimmed.",
    )
    group.addoption(
        "--compiled",
        choices=COMPILE_SCOPES,
        default="auto",
        help="which timed pairs get a torch.compile variant of their naive way: all, a few "
        "representative ones, or none. Default (auto): representative in the quick profile (each "
        "compile costs seconds on a small CPU), all in the full profile.",
    )
    group.addoption(
        "--timing-mode",
        default="warm",
        help="comma-separated GPU timing modes among warm,cold_l2,graph (or 'all'): each CUDA point "
        "is benchmarked once per mode. CPU points are always timed warm. Default: warm.",
    )


def devices(config) -> tuple[str, ...]:
    """The devices of the run, each once, in the order given; by default those present."""
    text = config.getoption("--device")
    if text is None:
        import torch

        return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
    return tuple(dict.fromkeys(d.strip() for d in text.split(",") if d.strip()))


def timing_modes(config) -> tuple[str, ...]:
    text = config.getoption("--timing-mode")
    if text.strip() == "all":
        return TIMING_MODES
    return tuple(m.strip() for m in text.split(",") if m.strip())


def validate(config) -> None:
    threads = config.getoption("--threads")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if threads is not None and not 1 <= threads <= MAX_THREADS_PER_CORE * cores:
        raise pytest.UsageError(
            f"--threads {threads}: use 1 to {MAX_THREADS_PER_CORE * cores} "
            f"({MAX_THREADS_PER_CORE}× the {cores} usable cores; more only oversubscribes them)"
        )
    seed = config.getoption("--seed")
    if not 0 <= seed < 2**63:
        raise pytest.UsageError(f"--seed {seed}: use an integer from 0 to 2**63 - 1 (a generator's seed)")
    budget = config.getoption("--time-budget")
    if budget is not None and not budget > 0:
        raise pytest.UsageError(f"--time-budget {budget}: use a positive number of seconds")
    modes = timing_modes(config)
    if not modes or any(m not in TIMING_MODES for m in modes):
        raise pytest.UsageError(
            f"--timing-mode {config.getoption('--timing-mode')!r}: use a comma-separated list of "
            f"{', '.join(TIMING_MODES)}, or all"
        )
    chosen = devices(config)
    if not chosen or any(d not in DEVICES for d in chosen):
        raise pytest.UsageError(
            f"--device {config.getoption('--device')!r}: use a comma-separated list of {', '.join(DEVICES)}"
        )
