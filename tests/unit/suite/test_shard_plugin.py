"""suite/shard_plugin.py without a pytest run: the shard's record in the results (K, N, attempt,
manifest, group, machine key, its node IDs) and nothing in a whole run."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reports.load import machine_key
from suite import shard_plugin
from tests.synthetic import MACHINE


def config_with(info):
    stash = pytest.Stash()
    if info is not None:
        stash[shard_plugin.SHARD] = info
    return SimpleNamespace(stash=stash)


def test_the_shard_and_its_machine_key_go_into_the_results():
    info = {"k": 2, "n": 4, "attempt": 1, "manifest": "abc", "group": "", "planned_s": 1.0, "points": ["a"]}
    output = {"machine_info": {"torch": dict(MACHINE)}, "suite": {"profile": "quick"}}
    shard_plugin.pytest_benchmark_update_json(config_with(info), [], output)
    assert output["suite"]["shard"] == {**info, "machine_key": machine_key(MACHINE)}
    assert output["suite"]["profile"] == "quick"


def test_a_whole_run_records_no_shard():
    output = {"machine_info": {"torch": dict(MACHINE)}, "suite": {}}
    shard_plugin.pytest_benchmark_update_json(config_with(None), [], output)
    assert "shard" not in output["suite"]
    assert shard_plugin.pytest_report_collectionfinish(config_with(None), None, []) is None


def test_planned_reads_what_plan_estimate_reads():
    item = SimpleNamespace(
        nodeid="suite/test_x.py::test_rule[c-x-cpu]",
        user_properties=[("point", {"case": "c"})],
        originalname="test_rule",
        name="test_rule[c-x-cpu]",
    )
    (p,) = shard_plugin.planned([item])
    assert (p.nodeid, p.case, p.test, p.point) == (item.nodeid, "c", "test_rule", None)
