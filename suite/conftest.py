"""Parametrisation of the suite's tests from the plan (`plan/__init__.py`), and the session's
fixtures: the input cache and the machine's ceilings. Hooks and fixtures only."""

from __future__ import annotations

import pytest
import torch

import plan
from harness import ceilings, noise
from suite import options
from suite.recorder import recorder


def pytest_generate_tests(metafunc):
    devices = options.devices(metafunc.config)
    if "variant_point" in metafunc.fixturenames:
        config = metafunc.config
        points = plan.variant_points(config.getoption("--profile"), devices, config.getoption("--compiled"))
        if "benchmark" in metafunc.fixturenames:
            points = plan.with_timing_modes(points, options.timing_modes(metafunc.config))
        predicate = getattr(metafunc.function, "select_points", None)
        if predicate is not None:
            points = [p for p in points if predicate(p)]
        metafunc.parametrize("variant_point", points, ids=[p.id for p in points])
    if "pair_point" in metafunc.fixturenames:
        points = plan.pair_points(metafunc.config.getoption("--profile"), devices)
        metafunc.parametrize("pair_point", points, ids=[p.id for p in points])
    if "check_point" in metafunc.fixturenames:
        points = plan.check_points(devices)
        metafunc.parametrize("check_point", points, ids=[p.id for p in points])


@pytest.fixture(scope="session")
def input_cache(request):
    cache = plan.InputCache(request.config.getoption("--seed"))
    yield cache
    cache.clear()


@pytest.fixture(scope="session")
def machine_ceilings(request):
    """`ceilings_for(device)`: this machine's measured ceilings (harness.ceilings), measured for
    every selected device the first time a timed test asks, i.e. before the first timing, and
    kept for the session in the run's record (the root conftest puts them in machine_info)."""

    recorded = recorder(request.config).ceilings

    def ceilings_for(device: str) -> dict:
        for d in options.devices(request.config):
            if d == "cpu" or (d == "cuda" and torch.cuda.is_available()):
                recorded[d] = ceilings.measured(d)
        return recorded.get(torch.device(device).type, ({}, {}))[0]

    return ceilings_for


@pytest.fixture(scope="session")
def noise_floor(request):
    """`floor_for(device)`: the machine's A/A noise floor on `device` (harness.noise), measured the
    first time a pair asks and kept in the run's record beside the ceilings."""
    measured = recorder(request.config).noise_floors

    def floor_for(device: str) -> float | None:
        if device not in measured:
            measured[device] = noise.measured(device)
        return measured[device]["floor"]

    return floor_for
