"""``--shard K/N``: this run keeps its slice of the plan (plan/shards.py) and records which.

After every other plugin has selected (``-k``, ``-m``, the checks left to their benchmarks), the
collected tests are dealt into N shards by the plan's cost model; the tests of the other shards
are deselected. The results file's ``suite.shard`` records K, N, the run attempt, the plan's
manifest hash, this shard's node IDs, the machine key and the group (``SUITE_SHARD_GROUP``: one
kind of machine × torch version of a fan-out), which `python -m reports merge` checks. A shard is
not a run: it never joins a history (the merged file does).
"""

from __future__ import annotations

import os

import pytest

from plan import shards

SHARD = pytest.StashKey[dict]()


def shard_of(config) -> dict | None:
    return config.stash.get(SHARD, None)


def planned(items):
    """plan.estimate.Planned of the collected items, as suite.collection collects them."""
    from plan import point_of
    from plan.estimate import Planned

    return [
        Planned(
            item.nodeid,
            frozenset(),
            False,
            case=(dict(item.user_properties).get("point") or {}).get("case", ""),
            test=getattr(item, "originalname", item.name),
            point=point_of(item),
        )
        for item in items
    ]


@pytest.hookimpl(wrapper=True)  # after every implementation, trylast ones included
def pytest_collection_modifyitems(config, items):
    result = yield
    text = config.getoption("--shard", None)
    if not text:
        return result
    k, n = shards.parse(text)  # checked already by suite.options.validate
    assignment = shards.assign(
        planned(items), n, cap_s=float(config.getoption("benchmark_max_time", 1.0) or 1.0)
    )
    mine = [item for item in items if assignment.shard_of[item.nodeid] == k]
    others = [item for item in items if assignment.shard_of[item.nodeid] != k]
    config.stash[SHARD] = {
        "k": k,
        "n": n,
        "attempt": shards.attempt(),
        "manifest": assignment.manifest,
        "group": os.environ.get("SUITE_SHARD_GROUP", ""),
        "planned_s": round(assignment.seconds[k - 1], 3),
        "points": [item.nodeid for item in mine],
    }
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = mine
    return result


def pytest_report_collectionfinish(config, start_path, items):
    info = shard_of(config)
    if info:
        return (
            f"shard {info['k']}/{info['n']} (attempt {info['attempt']}, manifest {info['manifest']}): "
            f"{len(info['points'])} tests, ~{info['planned_s']:.0f} s priced"
        )


@pytest.hookimpl(trylast=True)  # after suite.recorder has built `suite`
def pytest_benchmark_update_json(config, benchmarks, output_json):
    info = shard_of(config)
    if info is None:
        return
    from reports.load import machine_key

    torch_info = (output_json.get("machine_info") or {}).get("torch") or {}
    output_json.setdefault("suite", {})["shard"] = {**info, "machine_key": machine_key(torch_info)}
