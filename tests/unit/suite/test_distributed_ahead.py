"""suite/test_distributed.py's read_ahead: which untimed launches a test starts ahead (the run of
such tests from it, up to the first other or skipped one), in which order, and none under xdist."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from harness.run.ahead import Ahead
from suite import test_distributed


def _item(name, n, skipped=False):
    return SimpleNamespace(
        originalname=name,
        nodeid=f"suite/test_distributed.py::{name}[{n}]",
        callspec=SimpleNamespace(params={"launch_point": n}),
        get_closest_marker=lambda mark: object() if skipped and mark == "skip" else None,
    )


@pytest.fixture
def ran(monkeypatch):
    """The fake UNTIMED jobs record (name, point) in the order they run."""
    order: list[tuple[str, int]] = []
    fakes = {
        name: (lambda name: lambda runs, p, out: order.append((name, p)) or (name, p))(name)
        for name in test_distributed.UNTIMED
    }
    monkeypatch.setattr(test_distributed, "UNTIMED", fakes)
    return order


def _request(items, node):
    return SimpleNamespace(node=node, session=SimpleNamespace(items=items))


FACTORY = SimpleNamespace(mktemp=lambda name: f"/tmp/{name}-{next(itertools.count())}")


def test_the_run_of_untimed_tests_from_this_one_starts_in_the_declared_order(ran):
    items = [
        _item("test_setup_torchrun", 1),
        _item("test_fault_raising_rank", 2),
        _item("test_fault_hanging_rank", 3),
        _item("test_ddp", 4),  # timed: the run stops here
        _item("test_setup_spawn", 5),
    ]
    ahead = Ahead(1)
    got = test_distributed.read_ahead(_request(items, items[0]), ahead, None, FACTORY)
    assert got == ("test_setup_torchrun", 1)
    assert test_distributed.read_ahead(_request(items, items[2]), ahead, None, FACTORY) == (
        "test_fault_hanging_rank",
        3,
    )
    test_distributed.read_ahead(_request(items, items[1]), ahead, None, FACTORY)
    # The hanging rank first (it mostly waits), then the others as UNTIMED lists them.
    assert ran == [("test_fault_hanging_rank", 3), ("test_setup_torchrun", 1), ("test_fault_raising_rank", 2)]
    assert items[4].nodeid not in ahead


def test_a_skipped_test_ends_the_run(ran):
    items = [
        _item("test_setup_torchrun", 1),
        _item("test_setup_spawn", 2, skipped=True),
        _item("test_fault_raising_rank", 3),
    ]
    ahead = Ahead(1)
    test_distributed.read_ahead(_request(items, items[0]), ahead, None, FACTORY)
    assert items[1].nodeid not in ahead and items[2].nodeid not in ahead


def test_without_ahead_the_launch_runs_now(ran):
    items = [_item("test_setup_torchrun", 1), _item("test_setup_spawn", 2)]
    assert test_distributed.read_ahead(_request(items, items[1]), None, None, FACTORY) == (
        "test_setup_spawn",
        2,
    )
    assert ran == [("test_setup_spawn", 2)]
