"""Hooks for the harness's own tests. Kept to what a marker cannot say by itself."""

from __future__ import annotations

import gc
import os

import pytest

from harness.host import load


def pytest_runtest_setup(item):
    """A `timing` test asserts on wall-clock figures, which on a busy machine measure the
    neighbours: it runs only where the machine measures quiet now, else skips saying how busy."""
    if item.get_closest_marker("timing") is not None:
        reason = load.measure().busy_reason()
        if reason:
            pytest.skip(f"timing self-check not run: {reason}")


def pytest_collection_finish(session):
    """Everything collection imported (torch, pandas, matplotlib, every case) is kept for the whole
    session: moved out of the collector's reach, so the gate's and the reports' tests, which make
    and drop many small objects, do not pay for scanning it at each full collection."""
    gc.collect()
    gc.freeze()
    # The young generation collected every 5,000 net allocations instead of 700, the oldest
    # considered after 100 middle collections instead of 10: the collector took 9.3 s of the unit
    # tier (7.9 s in full collections, each scanning every object the tests keep), 4.8 s with these
    # thresholds (2-core EPYC; the same peak memory, 1.1 GB).
    gc.set_threshold(5000, 20, 100)


@pytest.fixture(autouse=True, scope="session")
def _children_keep_their_temporary_files_in_pytests_folder(tmp_path_factory):
    """Whatever the processes these tests start leave in their temp folder (the isolation
    workers' folder, kept where a test crashes one on purpose; a multiprocessing forkserver's
    socket folder where a child is killed) goes under pytest's own folder, which pytest prunes to
    its last three runs: `.ci/run` left a `suite-isolation-*` and a `pymp-*` folder in /tmp at
    every run."""
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("children-tmp"))
    yield
    if before is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before
