"""A pytest-xdist worker's set-up (suite/xdist_worker.py): the cores shared out among the workers,
its children's threads with them, xdist's environment marks dropped; nothing outside a worker."""

from types import SimpleNamespace

import pytest
import torch

from suite import xdist_worker


def _config(threads=None, workers=None):
    config = SimpleNamespace(getoption=lambda name: threads)
    if workers is not None:
        config.workerinput = {"workercount": workers, "workerid": "gw0"}
    return config


@pytest.mark.parametrize(
    "workers, cores, threads", [(2, 2, 1), (2, 16, 8), (16, 16, 1), (3, 2, 1), (1, 4, 4)]
)
def test_each_worker_gets_its_share_of_the_cores(workers, cores, threads):
    assert xdist_worker.threads_per_worker(workers, cores) == threads


@pytest.fixture
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_a_worker_shares_the_cores_and_drops_the_marks_its_children_would_inherit(monkeypatch, torch_threads):
    monkeypatch.setattr(xdist_worker.load, "usable_cores", lambda: 4)
    environ = {
        "PYTEST_XDIST_WORKER": "gw0",
        "PYTEST_XDIST_WORKER_COUNT": "2",
        "PYTEST_XDIST_TESTRUNUID": "x",
        "HOME": "/h",
    }
    xdist_worker.configure(_config(workers=2), environ)
    assert environ == {"HOME": "/h", "OMP_NUM_THREADS": "2"}
    assert torch.get_num_threads() == 2


def test_threads_asked_for_are_kept_and_outside_a_worker_nothing_changes(monkeypatch, torch_threads):
    monkeypatch.setattr(xdist_worker.load, "usable_cores", lambda: 4)
    torch.set_num_threads(3)
    environ = {"PYTEST_XDIST_WORKER": "gw0"}
    xdist_worker.configure(_config(threads=3, workers=2), environ)
    assert environ == {} and torch.get_num_threads() == 3  # --threads 3: the root conftest sets it
    environ = {"PYTEST_XDIST_WORKER": "gw0"}
    xdist_worker.configure(_config(), environ)
    assert environ == {"PYTEST_XDIST_WORKER": "gw0"} and torch.get_num_threads() == 3
