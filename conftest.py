"""pytest hooks for the whole repository: options, machine info and the run's record.

Kept thin on purpose; what a case is lives in `cases/`, how to measure in `harness/`, the results
contract in `harness/contract/record.py`, the points of a run in `plan/__init__.py` (parametrised by
`suite/conftest.py`) and the run's record (outcomes, findings, markers from requirements) in
`suite/recorder.py`.
"""

from __future__ import annotations

import sys

# A run of the tests imports ~250 of the project's modules and pytest rewrites the asserts of ~150
# test modules; with bytecode writing off (PYTHONDONTWRITEBYTECODE, as on this project's sandboxes)
# every run, and each of the integration tier's child runs of the suite, compiled all of it again:
# the unit tier's collection took 12.4 s against 4.4 s with its bytecode kept. It goes to the
# git-ignored __pycache__ folders, where Python keeps it by default.
sys.dont_write_bytecode = False

import copy

import pytest
import torch

from harness import machine
from harness.host import allocator
from harness.machine import requirements
from suite import options, pair_rounds, xdist_worker
from suite.progress_plugin import PROGRESS, ProgressPlugin
from suite.recorder import RECORDER, Recorder

# nothing lost on interrupt; sticky CUDA errors; --shard K/N
pytest_plugins = ["suite.persist", "suite.isolation_plugin", "suite.shard_plugin"]
MACHINE = pytest.StashKey[dict]()
ALLOCATOR = pytest.StashKey[dict]()


def pytest_addoption(parser):
    options.add_options(parser)


def pytest_report_header(config):
    # Said before the first test: on CUDA an override variable takes fp32 precision away from
    # torch's flags, and the checks that need the flags are not measured (harness.machine.requirements).
    if not torch.cuda.is_available() or "cuda" not in options.devices(config):
        return None
    return requirements.overridden("cuda") or None


def pytest_configure(config):
    options.validate(config)
    # Before anything allocates a timed tensor: a temporary's cost must not depend on which
    # points ran before it in the process (harness/host/allocator.py).
    config.stash[ALLOCATOR] = allocator.pin()
    xdist_worker.configure(config)  # under -n: the cores shared out among the workers
    if config.getoption("--threads") is not None:
        torch.set_num_threads(config.getoption("--threads"))
    config.stash[RECORDER] = Recorder(config)
    config.pluginmanager.register(config.stash[RECORDER], "suite-recorder")
    config.stash[PROGRESS] = ProgressPlugin(config)
    config.pluginmanager.register(config.stash[PROGRESS], "suite-progress")
    pair_rounds.configure(config)  # a pair's rounds timed once, for the pair and its sides' rows


def pytest_benchmark_update_machine_info(config, machine_info):
    # Read once per run: the JSON written at the end must not ask a CUDA context that a sticky
    # error killed mid-run (suite/isolation_plugin.py) for what it already said.
    if MACHINE not in config.stash:
        config.stash[MACHINE] = machine.machine_info()
    machine_info["torch"] = copy.deepcopy(config.stash[MACHINE])
    machine_info["torch"]["label"] = machine.machine_label(machine_info["torch"])
    machine_info["torch"]["allocator"] = dict(config.stash.get(ALLOCATOR, {}))
    # Ceilings and noise floors, measured outside any timing when first needed
    # (harness.machine.machine_measures
    # says when); absent when nothing in the session was timed.
    config.stash[RECORDER].machine.into(machine_info["torch"])
