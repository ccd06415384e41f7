"""Every committed results file gives the report it gave when its tables were frozen: summary.csv,
verdicts.csv and claims.csv, and the rows the history derives from it (speed-ups, points, verdicts),
byte for byte. The reports' modules may move and their readers change; what they say may not, unless
a commit means it to and rewrites the tables with
``python -m tests.unit.properties.test_report_tables_unchanged`` (then `git diff tests/data/report_tables`
is the change to the report, to be read before it is kept).
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from reports import build, load
from reports.history import ingest
from tests import paths

RESULTS = {
    "distance_cpu_all_recheck": paths.DATA / "distance_cpu_all_recheck.json",
    "distance_cpu_all_run1": paths.DATA / "distance_cpu_all_run1.json",
    "distance_cpu_run1": paths.DATA / "distance_cpu_run1.json",
    "distance_cpu_run2": paths.DATA / "distance_cpu_run2.json",
    "schema4_cpu_run": paths.DATA / "schema4_cpu_run.json.gz",
    "quick-compiled-all": paths.ROOT / "reports/reference/cpu-xeon-amx-2026-11-23/quick-compiled-all.json.gz",
}
FROZEN = paths.DATA / "report_tables"
# The history's derived tables, each in an order that does not depend on the order rows were added.
HISTORY = {
    "history_speedups.csv": "SELECT case_id, size_label, x, dtype, device, fast, slow, log, var, rounds, "
    "spread, busy, paired, hex(ratios) AS ratios, speedup, ci_low, ci_high, against FROM speedups "
    "ORDER BY rowid",
    "history_points.csv": "SELECT case_id, variant, size_label, dtype, device, rounds, median_s, iqr_s, "
    "peak_bytes FROM points ORDER BY rowid",
    "history_verdicts.csv": "SELECT case_id, claim, verdict, evidence FROM verdicts ORDER BY rowid",
}


def tables_of(path: Path) -> dict[str, str]:
    """File name → CSV text: the report's three tables and the history's rows for one results file."""
    t = build.tables(load.load([path]))
    out = {
        "summary.csv": t.summary.to_csv(index=False),
        "verdicts.csv": t.verdicts.to_csv(index=False),
        "claims.csv": t.claims.to_csv(index=False),
    }
    with tempfile.TemporaryDirectory() as tmp:
        history = Path(tmp) / "history.sqlite"
        ingest.add_files(history, [path])
        db = sqlite3.connect(str(history))
        try:
            for name, query in HISTORY.items():
                out[name] = pd.read_sql_query(query, db).to_csv(index=False)
        finally:
            db.close()
    return out


def rows_of(text: str) -> tuple[str, list[str]]:
    """A CSV's header and its lines in sorted order: summary.csv lists a fast variant's pairs over
    the library in the order of a set of names (`reports.summary.Group.pairs`), which changes with
    the interpreter's hash seed; every line must still be there, byte for byte."""
    header, *lines = text.splitlines()
    return header, sorted(lines)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_a_committed_results_file_reports_as_frozen(name):
    fresh = tables_of(RESULTS[name])
    frozen = {p.name: p.read_text(encoding="utf-8") for p in (FROZEN / name).glob("*.csv")}
    assert sorted(frozen) == sorted(fresh)
    changed = [table for table in fresh if rows_of(fresh[table]) != rows_of(frozen[table])]
    assert not changed, f"{name}: {changed} differ from tests/data/report_tables/{name}/"


def test_every_committed_results_file_is_frozen():
    """Every results document the repository holds (tests/data/, reports/reference/) is one of
    `RESULTS`: a file added without its frozen tables would read through the upgrade unchecked."""
    committed = [p.resolve() for p in paths.COMMITTED_RESULTS]
    assert sorted(committed) == sorted(p.resolve() for p in RESULTS.values())


def write_frozen() -> None:
    for name, path in RESULTS.items():
        folder = FROZEN / name
        folder.mkdir(parents=True, exist_ok=True)
        for table, text in tables_of(path).items():
            (folder / table).write_text(text, encoding="utf-8")
        print(f"{folder.relative_to(paths.ROOT)}: written", file=sys.stderr)


if __name__ == "__main__":
    write_frozen()
