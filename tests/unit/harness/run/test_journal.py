"""Rebuilding a results file from a run's journal (python -m harness.run.journal): never over a complete
results file, through a temporary file, into a name the report's folders read; a line cut by a crash is
ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run import journal


def test_journal_reader_ignores_a_line_cut_by_a_crash(tmp_path):
    path = tmp_path / "j.jsonl"
    j = journal.Journal(path)
    j.header({"machine_info": {"torch": {}}, "commit_info": {}, "benchmarks": [], "version": "5"})
    j.benchmark({"name": "a", "stats": {"rounds": 1}})
    j.extras({"outcomes": [{"case": "x"}], "suite": {"profile": "quick"}})
    j.extras({"outcomes": [{"case": "x"}, {"case": "y"}], "suite": {"profile": "quick"}})
    j.close()
    with open(path, "a") as f:
        f.write('{"kind": "benchmark", "row": {"name": "cut')
    tail = journal.Tail(path)
    assert [r["kind"] for r in tail.read()] == ["header", "benchmark", "extra", "extra", "extra"]
    assert tail.read() == []
    with open(path, "a") as f:
        f.write(' short"}}\n')
    assert [r["row"]["name"] for r in tail.read()] == ["cut short"]
    doc = journal.results_from(journal.read(path)[:-1], "test")
    assert [b["name"] for b in doc["benchmarks"]] == ["a"]
    assert doc["outcomes"] == [{"case": "x"}, {"case": "y"}]  # extended, not repeated
    assert doc["suite"] == {"profile": "quick", "partial": True, "partial_reason": "test"}
    with pytest.raises(journal.JournalError):
        journal.results_from([], "nothing finished")


def _journal(path: Path, points: int) -> Path:
    j = journal.Journal(path)
    j.header({"machine_info": {"node": "x"}, "commit_info": {}, "datetime": "now", "version": "5"})
    for i in range(points):
        j.benchmark({"name": f"p{i}", "fullname": f"t::p{i}", "stats": {"median": 1.0, "rounds": 3}})
    j._file.close()
    return path


def test_a_rebuild_never_replaces_a_complete_results_file(tmp_path, capsys):
    results = tmp_path / "r.json"
    complete = {"suite": {"partial": False}, "benchmarks": [{"name": f"p{i}"} for i in range(7)]}
    results.write_text(json.dumps(complete))
    _journal(tmp_path / f"r.json{journal.SUFFIX}", 2)
    assert journal.main([str(tmp_path / f"r.json{journal.SUFFIX}")]) == 0
    assert json.loads(results.read_text()) == complete, "the complete 7-point file was overwritten"
    rebuilt = tmp_path / "r.rebuilt.json"
    assert len(json.loads(rebuilt.read_text())["benchmarks"]) == 2
    assert "a complete results file, which is left as it was" in capsys.readouterr().out
    assert not list(tmp_path.glob(".*.tmp")), "a temporary file was left behind"


def test_an_empty_or_partial_results_file_is_what_the_rebuild_recovers(tmp_path):
    results = tmp_path / "r.json"
    results.write_text("")  # pytest-benchmark truncated it, then the run was killed
    _journal(tmp_path / f"r.json{journal.SUFFIX}", 3)
    assert journal.main([str(tmp_path / f"r.json{journal.SUFFIX}")]) == 0
    doc = json.loads(results.read_text())
    assert len(doc["benchmarks"]) == 3 and doc["suite"]["partial"] is True


def test_a_kept_leftover_journal_rebuilds_into_a_json_name(tmp_path):
    leftover = _journal(tmp_path / f"r.json.leftover-123{journal.SUFFIX}", 1)
    assert journal.default_out(leftover).name == "r.json.leftover-123.json"
    assert journal.default_out(tmp_path / "odd.log").name == "odd.log.json"
    assert journal.main([str(leftover)]) == 0
    assert (tmp_path / "r.json.leftover-123.json").exists()


def test_a_rebuild_keeps_a_gzipped_complete_file_and_a_partial_one_of_more_points(tmp_path, capsys):
    """`--out ref.json.gz` over a complete gzipped file wrote a 2-point partial as plain JSON under
    the .gz name (gzip read as "not complete"); a rebuild over a partial 6-point file replaced it
    with 2 points."""
    import gzip

    complete = {"suite": {"partial": False}, "benchmarks": [{"name": f"p{i}"} for i in range(6)]}
    ref = tmp_path / "ref.json.gz"
    ref.write_bytes(gzip.compress(json.dumps(complete).encode()))
    journal_path = _journal(tmp_path / f"x.json{journal.SUFFIX}", 2)
    assert journal.main([str(journal_path), "--out", str(ref)]) == 0
    assert json.loads(gzip.decompress(ref.read_bytes())) == complete
    assert len(json.loads((tmp_path / "ref.rebuilt.json").read_text())["benchmarks"]) == 2
    partial = tmp_path / "p.json"
    six = {"suite": {"partial": True}, "benchmarks": [{"name": f"p{i}"} for i in range(6)]}
    partial.write_text(json.dumps(six))
    assert journal.main([str(journal_path), "--out", str(partial)]) == 0
    assert json.loads(partial.read_text()) == six
    assert "a partial results file of 6 points" in capsys.readouterr().out
    # Into a new .gz name, the rebuild is gzip (the reports read it by its first bytes).
    fresh = tmp_path / "fresh.json.gz"
    assert journal.main([str(journal_path), "--out", str(fresh)]) == 0
    assert len(json.loads(gzip.decompress(fresh.read_bytes()))["benchmarks"]) == 2
