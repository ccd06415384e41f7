"""The suite's command-line options, read in one place (never at import time)."""

from __future__ import annotations

import pytest

DEVICES = ("cpu", "cuda")
PROFILES = ("quick", "full")


def add_options(parser) -> None:
    group = parser.getgroup("suite", "PyTorch technique suite")
    group.addoption(
        "--profile", choices=PROFILES, default="quick",
        help="sizes to run: quick (CI, seconds per case) or full (fills a GPU). Default: quick.",
    )
    group.addoption(
        "--device", default="cpu,cuda",
        help="comma-separated devices among cpu,cuda. Default: both; cuda tests are skipped with "
        "a reason where CUDA is not available.",
    )
    group.addoption("--seed", type=int, default=0, help="seed for every case's inputs. Default: 0.")


def devices(config) -> tuple[str, ...]:
    return tuple(d.strip() for d in config.getoption("--device").split(",") if d.strip())


def validate(config) -> None:
    chosen = devices(config)
    if not chosen or any(d not in DEVICES for d in chosen):
        raise pytest.UsageError(
            f"--device {config.getoption('--device')!r}: use a comma-separated list of {', '.join(DEVICES)}"
        )
