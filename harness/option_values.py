"""The suite's option values read and checked: plain functions of the values the command line
gave, each wrong value a ValueError naming the values that are allowed (suite/options.py turns it
into pytest's usage error)."""

from __future__ import annotations

from harness.load import usable_cores
from harness.timing import TIMING_MODES

DEVICES = ("cpu", "cuda")
MAX_THREADS_PER_CORE = 4  # torch.set_num_threads(100000) segfaulted; a few per core is already too many


def devices(text: str | None) -> tuple[str, ...]:
    """The devices of the run, each once, in the order given; by default (None) those present."""
    if text is None:
        import torch

        return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
    return tuple(dict.fromkeys(d.strip() for d in text.split(",") if d.strip()))


def timing_modes(text: str) -> tuple[str, ...]:
    if text.strip() == "all":
        return TIMING_MODES
    return tuple(m.strip() for m in text.split(",") if m.strip())


def check(
    *, threads: int | None, seed: int, time_budget: float | None, timing_mode: str, device: str | None
) -> None:
    """Raise ValueError for the first option (as spelled on the command line) whose value is wrong."""
    cores = usable_cores()
    if threads is not None and not 1 <= threads <= MAX_THREADS_PER_CORE * cores:
        raise ValueError(
            f"--threads {threads}: use 1 to {MAX_THREADS_PER_CORE * cores} "
            f"({MAX_THREADS_PER_CORE}× the {cores} usable cores; more only oversubscribes them)"
        )
    if not 0 <= seed < 2**63:
        raise ValueError(f"--seed {seed}: use an integer from 0 to 2**63 - 1 (a generator's seed)")
    if time_budget is not None and not time_budget > 0:
        raise ValueError(f"--time-budget {time_budget}: use a positive number of seconds")
    modes = timing_modes(timing_mode)
    if not modes or any(m not in TIMING_MODES for m in modes):
        raise ValueError(
            f"--timing-mode {timing_mode!r}: use a comma-separated list of {', '.join(TIMING_MODES)}, or all"
        )
    chosen = devices(device)
    if not chosen or any(d not in DEVICES for d in chosen):
        raise ValueError(f"--device {device!r}: use a comma-separated list of {', '.join(DEVICES)}")
