"""Parametrisation of the suite's tests from the plan (`plan/__init__.py`), and the session's
fixtures: the input cache, the machine's ceilings and noise floor, the pairs' rounds. Hooks and
fixtures only."""

from __future__ import annotations

import gc

import pytest

import plan
from suite import options
from suite.pair_rounds import pair_rounds as pair_rounds_of
from suite.recorder import recorder


def pytest_generate_tests(metafunc):
    config = metafunc.config
    by_argument = plan.points_by_argument(
        metafunc.fixturenames,
        profile=config.getoption("--profile"),
        devices=options.devices(config),
        compile_scope=config.getoption("--compiled"),
        timing_modes=options.timing_modes(config),
        predicate=getattr(metafunc.function, "select_points", None),
    )
    for argument, points in by_argument.items():
        metafunc.parametrize(argument, points, ids=[p.id for p in points])


CHECKS_IN_BENCHMARKS = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)  # after -k and -m have selected
def pytest_collection_modifyitems(config, items):
    """A variant's check is left to its benchmark where both are selected (plan.checks_run_by_benchmarks),
    unless pytest-benchmark skips every benchmark (--benchmark-skip): the check is then the only one."""
    tests = [(getattr(item, "originalname", item.name), plan.point_of(item)) for item in items]
    benchmarks_run = not config.getoption("benchmark_skip", False)
    dropped = set(plan.checks_run_by_benchmarks(tests)) if benchmarks_run else set()
    config.stash[CHECKS_IN_BENCHMARKS] = len(dropped)
    if dropped:
        config.hook.pytest_deselected(items=[items[i] for i in sorted(dropped)])
        items[:] = [item for i, item in enumerate(items) if i not in dropped]


def pytest_report_collectionfinish(config, start_path, items):
    """Says what the "deselected" count holds that nobody asked to leave out."""
    dropped = config.stash.get(CHECKS_IN_BENCHMARKS, 0)
    if dropped:
        return f"{dropped} test_check deselected: each variant's test_benchmark checks it first"


@pytest.fixture(scope="session")
def input_cache(request):
    cache = plan.InputCache(request.config.getoption("--seed"))
    yield cache
    cache.clear()


@pytest.fixture(scope="session")
def machine_ceilings(request):
    """`ceilings_for(device)`: this machine's measured ceilings (harness.machine.machine_measures)."""
    return recorder(request.config).machine.ceilings_for


@pytest.fixture(scope="session")
def noise_floor(request):
    """`floor_for(device)`: the machine's A/A noise floor on `device` (harness.machine.machine_measures)."""
    return recorder(request.config).machine.noise_floor


@pytest.fixture(scope="session")
def pair_rounds(request, input_cache, noise_floor):
    """The run's pairs' rounds (suite/pair_rounds.py), bound to this session's inputs and floor."""
    return pair_rounds_of(request.config).bound(
        config=request.config, input_cache=input_cache, noise_floor=noise_floor
    )


def pytest_collection_finish(session):
    """Where nothing is timed (``--benchmark-disable``: the test command and its child runs), what
    collection imported is moved out of the garbage collector's reach, as tests/conftest.py does:
    pytest's own collections at the session's end took 1.2 s of a 13 s child run of one case (2-core
    EPYC). A timed run is left as a user's program is, every object the collector's to scan."""
    if session.config.getoption("benchmark_disable", False):
        gc.collect()
        gc.freeze()
