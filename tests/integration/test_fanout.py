"""Many machines, one answer (issue 59): ``pytest suite --shard K/N`` and
``python -m suite.fanout --executor local`` (submitit's LocalExecutor, the Slurm path on this
machine): two shards of a small selection, merged, give the verdicts of one unsharded run, ID by ID."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests import paths

SELECTION = "shape.ops or onehot.encode"
# Checks only, as the test command's other child runs: two timed runs of one selection may differ in
# a speed verdict on a busy machine whatever the sharding (a timed comparison: the note of issue 59).
UNTIMED = ("--benchmark-disable",)


def run(*args, timeout=600):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=paths.ROOT, capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.mark.integration
@pytest.mark.parametrize("bad", ["0/4", "5/4", "x"])
def test_bad_shard_is_a_usage_error(bad):
    done = run("-m", "pytest", "suite", "--collect-only", "-q", "--shard", bad)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--shard takes K/N" in done.stderr


@pytest.mark.integration
def test_manifest_matches_the_shards_collection(tmp_path):
    manifest = tmp_path / "m.json"
    done = run("-m", "suite.manifest", "--shards", "3", "--out", str(manifest), "-k", SELECTION)
    assert done.returncode == 0, done.stderr
    doc = json.loads(manifest.read_text())
    for k in (1, 2, 3):
        done = run("-m", "pytest", "suite", "--collect-only", "-q", "-k", SELECTION, "--shard", f"{k}/3")
        assert done.returncode == 0, done.stdout[-2000:]
        collected = {line for line in done.stdout.splitlines() if "::" in line}
        assert collected == {p for p, s in doc["points"].items() if s == k}


@pytest.mark.integration
@pytest.mark.skipif(
    importlib.util.find_spec("submitit") is None, reason="submitit not installed (fanout extra)"
)
def test_local_fanout_gives_the_verdicts_of_one_run(tmp_path):
    out = tmp_path / "fanout"
    fanned = run(
        "-m",
        "suite.fanout",
        "--executor",
        "local",
        "--shards",
        "2",
        "--out",
        str(out),
        "--",
        "-k",
        SELECTION,
        *UNTIMED,
    )
    assert fanned.returncode == 0, fanned.stdout + fanned.stderr
    whole = tmp_path / "whole.json"
    single = run(
        "-m",
        "pytest",
        "suite",
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        SELECTION,
        "--results",
        str(whole),
        "--no-history",
        *UNTIMED,
    )
    assert single.returncode == 0, single.stdout[-2000:]
    merged = json.loads((out / "merged.json").read_text())
    assert [s["k"] for s in merged["suite"]["merged"]["shards"]] == [1, 2]
    one = json.loads(whole.read_text())
    assert sorted(o["nodeid"] for o in merged["outcomes"]) == sorted(o["nodeid"] for o in one["outcomes"])
    for name, path in (("merged", out / "merged.json"), ("whole", whole)):
        built = run("-m", "reports", "build", str(path), "--out", str(tmp_path / name))
        assert built.returncode == 0, built.stderr
    assert (tmp_path / "merged" / "verdicts.csv").read_text() == (
        tmp_path / "whole" / "verdicts.csv"
    ).read_text()
    # the merged file is one run: the gate takes it, the history keeps it once
    gate = run(
        "-m",
        "reports",
        "gate",
        "--baseline",
        str(whole),
        "--current",
        str(out / "merged.json"),
        "--allow-unjudged",
    )
    assert gate.returncode in (0, 1), gate.stderr
    history = tmp_path / "h.sqlite"
    for said in ("added as run", "already in the history"):
        added = run("-m", "reports", "history", "add", str(out / "merged.json"), "--history", str(history))
        assert said in added.stdout
    # 20 clean merges of the real shard files, in both orders, with and without the manifest: none refused
    from reports.__main__ import main as reports_main

    shard_files = sorted(str(p) for p in out.glob("shard-*.json"))
    for trial in range(20):
        files = shard_files if trial % 2 else shard_files[::-1]
        extra = ["--manifest", str(out / "manifest.json")] if trial % 4 < 2 else []
        assert reports_main(["merge", *files, "--out", str(tmp_path / f"m{trial}.json"), *extra]) == 0


BLOCKED = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'cases', 'plan'):
            raise ImportError(f'{name} is blocked: reports must read only the results JSON')
sys.meta_path.insert(0, Block())
from reports.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.integration
def test_merge_needs_neither_torch_nor_cases(tmp_path):
    from tests.unit.reports.test_merge import clean, write_all

    args = [
        *write_all(tmp_path, clean()),
        "--out",
        str(tmp_path / "m.json"),
        "--manifest",
        str(tmp_path / "manifest.json"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED, "merge", *args],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
