"""plan/shards.py: a shard is a slice of the plan: deterministic, every test in exactly one shard,
a timed pair with its sides, launches dealt by their price, not their count."""

from __future__ import annotations

import pytest

import plan
from plan import launches, shards
from plan.estimate import Planned


@pytest.fixture(scope="module")
def planned():
    """The quick CPU plan's timed tests and the distributed launches, as suite.collection collects them."""
    devices = ("cpu",)
    out = []
    for p in plan.pair_points("quick", devices):
        out.append(
            Planned(f"suite/test_pairs.py::test_pair[{p.id}]", frozenset(), False, p.case.id, "test_pair", p)
        )
    for p in plan.variant_points("quick", devices, "none"):
        out.append(
            Planned(
                f"suite/test_cases.py::test_benchmark[{p.id}]",
                frozenset(),
                False,
                p.case.id,
                "test_benchmark",
                p,
            )
        )
    for test in launches.LAUNCHES:
        for p in launches.points(test, devices):
            out.append(
                Planned(f"suite/test_distributed.py::{test}[{p.id}]", frozenset(), False, p.case, test, p)
            )
    return out


@pytest.mark.parametrize("text", ["0/4", "5/4", "x", "1/0", "-1/4", "2/", ""])
def test_bad_shard_names_the_valid_form(text):
    with pytest.raises(ValueError, match=r"--shard takes K/N"):
        shards.parse(text)


def test_parse_and_attempt(monkeypatch):
    assert shards.parse("2/4") == (2, 4)
    for name in ("SUITE_ATTEMPT", "GITHUB_RUN_ATTEMPT", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)
    assert shards.attempt() == 1
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    assert shards.attempt() == 3
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "2")
    assert shards.attempt() == 2
    monkeypatch.setenv("SUITE_ATTEMPT", "5")
    assert shards.attempt() == 5


def test_every_test_in_exactly_one_shard_and_deterministic(planned):
    a = shards.assign(planned, 4)
    assert set(a.shard_of) == {p.nodeid for p in planned}
    assert set(a.shard_of.values()) == {1, 2, 3, 4}
    assert sorted(n for k in range(1, 5) for n in a.points(k)) == sorted(a.shard_of)
    assert shards.assign(list(reversed(planned)), 4).shard_of == a.shard_of
    assert a.manifest == shards.manifest_hash(p.nodeid for p in planned)
    assert shards.assign(planned, 3).manifest == a.manifest  # the plan's hash, whatever N


def test_a_pair_and_its_sides_share_a_shard(planned):
    a = shards.assign(planned, 4)
    by_id = {p.point.id: p.nodeid for p in planned if p.test == "test_benchmark"}
    pairs = [p for p in planned if p.test == "test_pair"]
    assert pairs
    for pair in pairs:
        for side in pair.point.sides:
            assert a.shard_of[by_id[side.id]] == a.shard_of[pair.nodeid], pair.nodeid


def test_balanced_by_price(planned):
    a = shards.assign(planned, 4)
    assert max(a.seconds) - min(a.seconds) <= max(a.seconds) * 0.1


def test_launches_dealt_by_price_not_count():
    """Three 3-s CPU launches and one 20-s CUDA launch into two shards: by count 2 + 2, by price the
    CUDA launch alone."""
    points = [plan.LaunchPoint.on("parallel.allreduce", "", "cpu", w) for w in (2, 3, 4)]
    points.append(plan.LaunchPoint.on("parallel.allreduce", "", "cuda", 2))
    planned = [Planned(f"t[{p.id}]", frozenset(), False, p.case, "test_allreduce", p) for p in points]
    a = shards.assign(planned, 2)
    cuda = a.shard_of["t[parallel.allreduce-w2-cuda]"]
    assert a.points(cuda) == ["t[parallel.allreduce-w2-cuda]"]
    assert len(a.points(3 - cuda)) == 3
