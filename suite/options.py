"""The suite's command-line options, declared for pytest and read in one place (never at import
time); their values are parsed and checked by harness.run.option_values, whose ValueError is a usage
error here."""

from __future__ import annotations

import pytest

from cases.spec import PROFILES
from harness.measure import faulted_pages
from harness.measure.compiled import COMPILE_SCOPES
from harness.run import option_values
from plan import shards


def min_rounds(config) -> int:
    """pytest-benchmark's --benchmark-min-rounds (its default, 5, where unset)."""
    return int(config.getoption("benchmark_min_rounds", 5) or 5)


def max_time_s(config) -> float:
    """pytest-benchmark's --benchmark-max-time, the seconds of rounds a point may take (default 1)."""
    return float(config.getoption("benchmark_max_time", 1.0) or 1.0)


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
        "--history",
        default=None,
        metavar="PATH",
        help="append the finished run to this history (reports.history, SQLite). Default: "
        "history.sqlite beside --results; only runs that write --results are appended.",
    )
    group.addoption(
        "--no-history",
        action="store_true",
        default=False,
        help="do not append the run to a history",
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
        "--faulted-pages",
        choices=faulted_pages.SCOPES,
        default="auto",
        help="which cases' CPU points are also timed with every large temporary's pages faulted on "
        "each call (glibc's initial 128 KiB mmap threshold held; a fresh process, "
        "torch.utils.benchmark), shown beside the suite's settled-heap figure: a default program "
        "lies between the two. all, the representative ones, or none. Default (auto): "
        "representative in the quick profile (distance.pairwise, layernorm.manual), all in the "
        "full profile.",
    )
    group.addoption(
        "--shard",
        default=None,
        metavar="K/N",
        help="run the K-th of N slices of the plan (plan/shards.py: a timed pair with its sides, "
        "balanced by the plan's cost model); the results record K, N, the attempt and the manifest "
        "hash for `python -m reports merge`. Default: the whole plan.",
    )
    group.addoption(
        "--timing-mode",
        default="warm",
        help="comma-separated GPU timing modes among warm,cold_l2,graph (or 'all'): each CUDA point "
        "is benchmarked once per mode. CPU points are always timed warm. Default: warm.",
    )


def devices(config) -> tuple[str, ...]:
    return option_values.devices(config.getoption("--device"))


def faulted_pages_cases(config) -> tuple[str, ...] | None:
    """The cases whose CPU points are also timed with pages faulted (None: every case)."""
    return faulted_pages.cases_in(config.getoption("--faulted-pages"), config.getoption("--profile"))


def timing_modes(config) -> tuple[str, ...]:
    return option_values.timing_modes(config.getoption("--timing-mode"))


def validate(config) -> None:
    try:
        option_values.check(
            threads=config.getoption("--threads"),
            seed=config.getoption("--seed"),
            time_budget=config.getoption("--time-budget"),
            timing_mode=config.getoption("--timing-mode"),
            device=config.getoption("--device"),
            max_time=float(config.getoption("--benchmark-max-time", None) or "nan"),
            results=config.getoption("--results"),
        )
        if config.getoption("--shard", None) is not None:
            shards.parse(config.getoption("--shard"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
