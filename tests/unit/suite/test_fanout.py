"""suite/fanout.py without a cluster: a fake submitit executor whose shard 2 dies once; the retry is
the next attempt, and the merge takes it (the latest complete attempt) and names the first."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from suite import fanout
from suite import manifest as suite_manifest
from tests.unit.reports.test_merge import manifest, shard_doc

pytest.importorskip("submitit")


class FakeExecutor:
    def __init__(self, die_once: set[int]):
        self.die_once = die_once
        self.submitted: list[tuple[int, int]] = []

    def map_array(self, fn, ks, ns, attempts, args, out_dirs, groups):
        jobs = []
        for k, attempt, out in zip(ks, attempts, out_dirs):
            self.submitted.append((k, attempt))
            path = f"{out}/shard-{k}-of-3-attempt{attempt}.json"
            partial = k in self.die_once and attempt == 1
            with open(path, "w") as f:
                json.dump(shard_doc(k, attempt=attempt, partial=partial), f)
            code = 2 if partial else 0
            result = {"k": k, "attempt": attempt, "code": code, "path": path, "seconds": 1.0}
            jobs.append(SimpleNamespace(result=lambda r=result: r))
        return jobs


def test_a_dead_shard_is_retried_and_the_merge_takes_the_latest_complete_attempt(
    tmp_path, monkeypatch, capsys
):
    executor = FakeExecutor(die_once={2})
    monkeypatch.setattr(fanout, "executor_for", lambda args, folder: executor)
    monkeypatch.setattr(suite_manifest, "build", lambda args, n: manifest(n=n))
    code = fanout.main(["--executor", "local", "--shards", "3", "--out", str(tmp_path), "--", "-k", "x"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert executor.submitted == [(1, 1), (2, 1), (3, 1), (2, 2)]
    assert "attempt 2 (shard-2-of-3-attempt2.json) taken" in out
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [(s["k"], s["attempt"]) for s in merged["suite"]["merged"]["shards"]] == [(1, 1), (2, 2), (3, 1)]


def test_a_shard_that_stays_dead_is_refused(tmp_path, monkeypatch, capsys):
    executor = FakeExecutor(die_once={2})
    monkeypatch.setattr(fanout, "executor_for", lambda args, folder: executor)
    monkeypatch.setattr(suite_manifest, "build", lambda args, n: manifest(n=n))
    code = fanout.main(["--executor", "local", "--shards", "3", "--retries", "0", "--out", str(tmp_path)])
    assert code == 3
    assert "shard 2/3 incomplete" in capsys.readouterr().err
