"""A synthetic results file of one case judged by the report's stages (`reports.build.tables`,
no plots), read back as its CSV reads: what the verdicts' tests assert on."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from harness.contract import record, rules
from reports import build, load
from tests import synthetic

CASE = "x.case"
NAIVE_AND_FAST = (("naive_v", "naive", 4.0), ("fast_v", "optimized", 1.0))


def declared(rule) -> dict:
    return {CASE: record.CaseInfo(id=CASE, tier=2, claim="fast_v is faster", rule=rule).to_data()}


def report(tmp_path: Path, rule=rules.Faster(), schema=record.SCHEMA_VERSION, **kw):
    doc = synthetic.result(
        cases=(CASE,),
        variants=kw.pop("variants", NAIVE_AND_FAST),
        schema_version=schema,
        cases_info=declared(rule),
        **kw,
    )
    judged = build.tables(load.from_documents([("run.json", doc)]))
    summary, verdicts = as_written(judged.summary), as_written(judged.verdicts).set_index("case")
    return summary, verdicts.loc[CASE]


def as_written(table: pd.DataFrame) -> pd.DataFrame:
    """`table` as its CSV reads back (what a user of the report sees): the report's tables without
    drawing its plots, which is most of a build's time (build.tables)."""
    return pd.read_csv(io.StringIO(table.to_csv(index=False)), keep_default_na=False)


def check(verdict, evidence="observed it", errata=()):
    return {
        "case": CASE,
        "kind": "check",
        "check": f"c_{verdict}",
        "device": "cpu",
        "nodeid": f"x::c_{verdict}",
        "outcome": "passed",
        "finding": record.Finding(
            record.Verdict(verdict) if verdict else None, evidence, tuple(errata)
        ).to_data(),
    }
