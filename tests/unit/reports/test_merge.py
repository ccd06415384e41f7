"""`python -m reports merge`: the shards of a run put back together, failing closed (exit 3) on each
of the eight faults of issue 59, 2 on a file that is not a shard, 0 only when complete."""

from __future__ import annotations

import copy
import json

import pytest

from plan import shards
from reports import __main__ as cli
from reports.load import machine_key
from tests.synthetic import MACHINE

POINTS = [f"suite/test_cases.py::test_benchmark[c{i}]" for i in range(12)]
N = 3


def manifest(points=POINTS, n=N) -> dict:
    shard_of = {p: i % n + 1 for i, p in enumerate(points)}
    return {"manifest": shards.manifest_hash(points), "n": n, "points": shard_of, "planned_s": [1.0] * n}


def shard_doc(k, n=N, attempt=1, *, plan=None, torch="2.13.0+cpu", partial=False, points=None) -> dict:
    plan = plan or manifest(n=n)
    machine = {**MACHINE, "torch_version": torch}
    mine = [p for p, s in plan["points"].items() if s == k] if points is None else points
    return {
        "datetime": f"2026-11-28T15:0{k}:00",
        "benchmarks": [],
        "machine_info": {"torch": machine},
        "suite": {
            "profile": "quick",
            "devices": ["cpu"],
            "partial": partial,
            "partial_reason": "interrupted" if partial else "",
            "shard": {
                "k": k,
                "n": n,
                "attempt": attempt,
                "manifest": plan["manifest"],
                "group": "",
                "machine_key": machine_key(machine),
                "points": mine,
            },
        },
        "outcomes": [
            {"case": "c", "kind": "check", "check": p, "nodeid": p, "outcome": "passed"} for p in mine
        ],
        "pairs": [],
    }


def write_all(tmp_path, docs: dict) -> list[str]:
    paths = []
    for name, doc in docs.items():
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    (tmp_path / "manifest.json").write_text(json.dumps(manifest()))
    return paths


def merge(tmp_path, docs, capsys, with_manifest=True):
    args = [*write_all(tmp_path, docs), "--out", str(tmp_path / "out" / "merged.json")]
    if with_manifest:
        args += ["--manifest", str(tmp_path / "manifest.json")]
    code = cli.main(["merge", *args])
    return code, capsys.readouterr()


def clean():
    return {f"s{k}.json": shard_doc(k) for k in range(1, N + 1)}


def drop_machine_key(docs):
    del docs["s2.json"]["suite"]["shard"]["machine_key"]


def two_shards(docs):
    docs["s3.json"]["suite"]["shard"]["points"].append(docs["s1.json"]["suite"]["shard"]["points"][0])


def in_none(docs):
    docs["s2.json"]["suite"]["shard"]["points"].pop()


FAULTS = {
    "dropped": (lambda d: d.pop("s2.json"), "missing shard 2/3"),
    "duplicated": (lambda d: d.update({"s2b.json": copy.deepcopy(d["s2.json"])}), "duplicated shard 2/3"),
    "retried": (
        lambda d: d.update(
            {"s2.json": shard_doc(2, partial=True), "s2b.json": shard_doc(2, attempt=2, partial=True)}
        ),
        "retried shard 2/3 with no rule to pick",
    ),
    "changed N": (lambda d: d.update({"s3.json": shard_doc(3, n=4, plan=manifest(n=4))}), "changed N"),
    "point in two shards": (two_shards, "point in two shards"),
    "point in none": (in_none, "point in none"),
    "torch mismatch": (lambda d: d.update({"s3.json": shard_doc(3, torch="2.14.1+cpu")}), "torch mismatch"),
    "missing machine key": (drop_machine_key, "missing machine key"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_refused_with_exit_3_naming_it(tmp_path, capsys, fault):
    change, said = FAULTS[fault]
    docs = clean()
    change(docs)
    code, out = merge(tmp_path, docs, capsys)
    assert code == 3, out
    assert said in out.err
    assert not (tmp_path / "out" / "merged.json").exists()


def test_faults_seen_red_without_manifest_too(tmp_path, capsys):
    """Without --manifest the shards' own manifest hash still catches a point in none."""
    docs = clean()
    in_none(docs)
    code, out = merge(tmp_path, docs, capsys, with_manifest=False)
    assert code == 3 and "do not hash to their manifest" in out.err


def test_clean_merge_is_one_run(tmp_path, capsys):
    code, out = merge(tmp_path, clean(), capsys)
    assert code == 0, out.err
    doc = json.loads((tmp_path / "out" / "merged.json").read_text())
    assert "shard" not in doc["suite"] and doc["suite"]["merged"]["n"] == N
    assert sorted(o["nodeid"] for o in doc["outcomes"]) == sorted(POINTS)


def test_latest_complete_attempt_wins_and_the_other_is_named(tmp_path, capsys):
    docs = clean()
    docs["s2.json"] = shard_doc(2, partial=True)
    docs["s2b.json"] = shard_doc(2, attempt=2)
    code, out = merge(tmp_path, docs, capsys)
    assert code == 0, out.err
    assert "attempt 2 (s2b.json) taken" in out.out and "attempt 1 (s2.json, partial" in out.out
    doc = json.loads((tmp_path / "out" / "merged.json").read_text())
    assert {"k": 2, "attempt": 2, "file": "s2b.json"} in doc["suite"]["merged"]["shards"]


def test_a_whole_run_or_garbage_is_bad_input(tmp_path, capsys):
    whole = shard_doc(1)
    del whole["suite"]["shard"]
    (tmp_path / "w.json").write_text(json.dumps(whole))
    (tmp_path / "g.json").write_text("{")
    for name in ("w.json", "g.json"):
        assert cli.main(["merge", str(tmp_path / name), "--out", str(tmp_path / "m.json")]) == 2
    assert "not a shard" in capsys.readouterr().err


def test_twenty_clean_merges_in_any_order(tmp_path, capsys):
    import random

    docs = clean()
    names = list(docs)
    rng = random.Random(59)
    for trial in range(20):
        rng.shuffle(names)
        folder = tmp_path / str(trial)
        folder.mkdir()
        code, out = merge(folder, {n: docs[n] for n in names}, capsys)
        assert code == 0, out.err


def test_the_gate_refuses_a_shard_as_its_current_run(tmp_path, capsys):
    paths = write_all(tmp_path, clean())
    assert cli.main(["gate", "--baseline", paths[0], "--current", paths[0]]) == 2
    assert "a shard of a run, not a run" in capsys.readouterr().err
