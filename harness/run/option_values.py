"""The suite's option values read and checked: plain functions of the values the command line
gave, each wrong value a ValueError naming the values that are allowed (suite/options.py turns it
into pytest's usage error)."""

from __future__ import annotations

import math
import os
from pathlib import Path

from harness.host.load import usable_cores
from harness.measure import device as device_layer
from harness.measure.timing import TIMING_MODES

DEVICES = ("cpu", "cuda")
MAX_THREADS_PER_CORE = 4  # torch.set_num_threads(100000) segfaulted; a few per core is already too many


def devices(text: str | None) -> tuple[str, ...]:
    """The devices of the run, each once, in the order given; by default (None) those present."""
    if text is None:
        from harness.measure import device

        return ("cpu", "cuda") if device.cuda_available() else ("cpu",)
    return tuple(dict.fromkeys(d.strip() for d in text.split(",") if d.strip()))


def timing_modes(text: str) -> tuple[str, ...]:
    if text.strip() == "all":
        return TIMING_MODES
    return tuple(m.strip() for m in text.split(",") if m.strip())


def check(
    *,
    threads: int | None,
    seed: int,
    time_budget: float | None,
    timing_mode: str,
    device: str | None,
    max_time: float | None = None,  # NaN or None: not given
    results: str | None = None,
) -> None:
    """Raise ValueError for the first option (as spelled on the command line) whose value is wrong,
    before the first test: a value found wrong at the end of a run costs every outcome."""
    cores = usable_cores()
    if threads is not None and not 1 <= threads <= MAX_THREADS_PER_CORE * cores:
        raise ValueError(
            f"--threads {threads}: use 1 to {MAX_THREADS_PER_CORE * cores} "
            f"({MAX_THREADS_PER_CORE}× the {cores} usable cores; more only oversubscribes them)"
        )
    if not 0 <= seed < 2**63:
        raise ValueError(f"--seed {seed}: use an integer from 0 to 2**63 - 1 (a generator's seed)")
    if time_budget is not None and not (time_budget > 0 and math.isfinite(time_budget)):
        raise ValueError(f"--time-budget {time_budget}: use a positive, finite number of seconds")
    if max_time is not None and not math.isnan(max_time) and not (max_time > 0 and math.isfinite(max_time)):
        raise ValueError(
            f"--benchmark-max-time {max_time}: use a positive, finite number of seconds "
            "(the cap of one point's timed rounds)"
        )
    if results is not None:
        target = Path(results)
        if target.is_dir():
            raise ValueError(f"--results {results}: is a folder; name the results file to write")
        folder = target.parent if str(target.parent) else Path(".")
        if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"--results {results}: cannot write into {folder}")
    modes = timing_modes(timing_mode)
    if not modes or any(m not in TIMING_MODES for m in modes):
        raise ValueError(
            f"--timing-mode {timing_mode!r}: use a comma-separated list of {', '.join(TIMING_MODES)}, or all"
        )
    chosen = devices(device)
    other = [d for d in chosen if d in device_layer.ACCELERATORS]
    if other:
        raise ValueError(
            f"--device {other[0]}: the device layer reaches it (torch.accelerator: "
            "harness.measure.device.AcceleratorDevice), but the cases declare their dtypes, tolerances "
            f"and memory guards for {' and '.join(DEVICES)} only; run those"
        )
    if not chosen or any(d not in DEVICES for d in chosen):
        raise ValueError(f"--device {device!r}: use a comma-separated list of {', '.join(DEVICES)}")
