"""suite/manifest.py: the manifest written before a fan-out: every collected test with its shard,
the plan's hash, the run's arguments less --shard."""

from __future__ import annotations

import json

import plan
from plan import estimate, shards
from suite import collection, manifest


def planned():
    return [
        estimate.Planned(
            f"suite/test_pairs.py::test_pair[{p.id}]", frozenset(), False, p.case.id, "test_pair", p
        )
        for p in plan.pair_points("quick", ("cpu",))
    ]


def test_without_shard():
    assert manifest.without_shard(["-k", "x", "--shard", "1/2", "--shard=2/2", "-q"]) == ["-k", "x", "-q"]


def test_build_deals_the_collection(monkeypatch, tmp_path, capsys):
    seen = []
    monkeypatch.setattr(collection, "collect", lambda args: seen.append(args) or planned())
    assert (
        manifest.main(["--shards", "3", "--out", str(tmp_path / "m.json"), "--", "-k", "x", "--shard", "1/3"])
        == 0
    )
    doc = json.loads((tmp_path / "m.json").read_text())
    assert seen == [["-k", "x"]] and doc["pytest_args"] == ["-k", "x"]
    assert doc["n"] == 3 and set(doc["points"].values()) == {1, 2, 3}
    assert doc["manifest"] == shards.manifest_hash(p.nodeid for p in planned())
    assert doc["points"] == shards.assign(planned(), 3).shard_of
    assert "3 shards" in capsys.readouterr().err
