"""Synthetic results files in the harness's format, for the reports' and the gate's own tests.

Per-round times are drawn from a log-normal around a known median, so a test knows the true
speedup a report should find. Nothing here is ever shown as a measurement.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd

from harness.contract import declared, record, rules
from reports import load

MACHINE = {
    "torch_version": "2.13.0+cpu",
    "cuda_version": None,
    "gpu": {"count": 0},
    "cpu_detail": {"model": "Synthetic CPU", "usable_cores": 2, "features": {"avx2": True}},
    "precision": {"float32_matmul_precision": "highest"},
    "label": "Synthetic CPU (2 cores)",
}
VARIANTS = (("naive_v", "naive", 4.0), ("fast_v", "optimized", 1.0), ("lib_v", "library", 1.5))


def _stats(data: np.ndarray) -> dict:
    # The standard library's "inclusive" quartiles are numpy's default (linear) ones, without
    # np.quantile's ~50 µs a call: the Monte Carlo tests build thousands of these documents.
    q1, median, q3 = (
        statistics.quantiles(data.tolist(), n=4, method="inclusive")
        if data.size > 1
        else [float(data[0])] * 3
    )
    return {
        "min": float(data.min()),
        "max": float(data.max()),
        "mean": float(data.mean()),
        "stddev": float(data.std(ddof=1)) if data.size > 1 else 0.0,
        "rounds": int(data.size),
        "median": float(median),
        "iqr": float(q3 - q1),
        "q1": float(q1),
        "q3": float(q3),
        "iterations": 1,
        "data": data.tolist(),
    }


def rounds(median: float, n: int, rng: np.random.Generator, sigma: float = 0.04) -> np.ndarray:
    return median * rng.lognormal(0.0, sigma, n)


def result(
    cases=("distance.pairwise",),
    variants=VARIANTS,
    sizes=(128, 256, 512),
    dtypes=("float32",),
    devices=("cpu",),
    n_rounds=20,
    seed=0,
    machine=None,
    sigma=0.04,
    slow=None,
    outcomes=None,
    peak=True,
    paired=False,
    busy="",
    identical=None,
    schema_version=None,
    cases_info=None,
) -> dict:
    """A results document. ``variants``: (name, role, time factor); ``slow``: {variant: factor}
    applied on top (an injected regression). ``paired``: also each optimized and library variant
    timed side by side with the naive one (``pairs``), every round's two sides sharing one
    machine speed drawn per round (what interleaving is for), ``busy`` the load's reason and
    ``identical`` whether their outputs were bitwise equal. ``schema_version``/``cases_info``:
    the run's schema and declarations ({id: CaseInfo data}), absent by default (a schema-1 file)."""
    rng = np.random.default_rng(seed)
    slow = slow or {}
    benchmarks, ledger, pairs = [], [], []
    for case in cases:
        for n in sizes:
            for dtype in dtypes:
                for device in devices:
                    for name, role, factor in variants:
                        median = 1e-6 * n * factor * slow.get(name, 1.0)
                        label = f"n{n}"
                        info = {
                            "case": case,
                            "kind": "variant",
                            "variant": name,
                            "role": role,
                            "size": {"n": n},
                            "size_label": label,
                            "dtype": dtype,
                            "device": device,
                            "tier": 1,
                            "x": "n",
                            "flops": 2.0 * n**3,
                            "bytes": 12.0 * n * n,
                            "peak_bytes": float(n * n * 4 * factor) if peak else None,
                            "max_abs_err": 1e-6,
                            "max_rel_err": 1e-7,
                        }
                        benchmarks.append(
                            {
                                "group": f"{case} {label}",
                                "name": f"test_benchmark[{case}-{name}-{label}]",
                                "fullname": f"suite/test_cases.py::test_benchmark[{case}-{name}-{label}]",
                                "extra_info": info,
                                "stats": _stats(rounds(median, n_rounds, rng, sigma)),
                            }
                        )
                        ledger.append(
                            {
                                **{
                                    k: info[k]
                                    for k in (
                                        "case",
                                        "kind",
                                        "variant",
                                        "role",
                                        "size",
                                        "size_label",
                                        "dtype",
                                        "device",
                                    )
                                },
                                "nodeid": f"x::test_check[{case}-{name}-{label}]",
                                "outcome": "passed",
                            }
                        )
                    if paired:
                        pairs.extend(_pairs(case, n, dtype, device, variants, slow, n_rounds, rng, sigma))
                        for pair in pairs[-2:]:
                            pair.update(identical=identical, load={"busy": busy or None})
    suite = {"profile": "quick", "devices": list(devices), "seed": 0}
    if schema_version is not None:
        suite["schema_version"] = schema_version
    doc = {
        "machine_info": {"node": "synthetic", "torch": dict(machine or MACHINE)},
        "commit_info": {"id": "0" * 40},
        "benchmarks": benchmarks,
        "datetime": "2026-01-01T00:00:00",
        "version": "5.2.3",
        "suite": suite,
        "outcomes": ledger + list(outcomes or []),
    }
    if pairs:
        doc["pairs"] = pairs
    if cases_info is not None:
        doc["cases"] = cases_info
        if schema_version == record.SCHEMA_VERSION:
            doc["cases"] = _with_timed_pairs(cases_info, variants)
    return doc


def _with_timed_pairs(cases_info: dict, variants) -> dict:
    """The declarations as a current run records them (harness.contract.declared.case_infos), where
    a test's declaration left them out: each case's timed pairs, the ones its rule names among
    `variants` (harness.contract.rules.compared_pairs), and a case without claims as its one claim
    (harness.contract.declared.as_one_claim). Worked out once per declaration and read back as new
    dicts each time (the Monte Carlo tests build hundreds of documents of one declaration)."""
    return json.loads(_declared_as_run(json.dumps([cases_info, [list(v) for v in variants]])))


@functools.lru_cache(maxsize=64)
def _declared_as_run(key: str) -> str:
    cases_info, variants = json.loads(key)
    roles = {name: role for name, role, _ in variants}
    out = {}
    for case_id, info in cases_info.items():
        info = dict(info)
        rule = record.rule_from_data(info["rule"]) if info.get("rule") else None
        if not info.get("timed"):
            info["timed"] = [
                record.TimedPair("", fast, slow, against).to_data()
                for fast, slow, against in rules.compared_pairs(rule, roles)
            ]
        if not info.get("claims") and info.get("declared", True):
            words = str(info.get("claim") or case_id)
            rule, claim = declared.as_one_claim(rule, words, str(info.get("source") or ""))
            info.update(rule=record.rule_to_data(rule), claims=[claim.to_data()])
        out[case_id] = info
    return json.dumps(out)


def _pairs(case, n, dtype, device, variants, slow, n_rounds, rng, sigma) -> list[dict]:
    naive = [(name, f) for name, role, f in variants if role == "naive"]
    others = [(name, f, role) for name, role, f in variants if role in ("optimized", "library")]
    out = []
    for (slow_name, slow_f), (fast_name, fast_f, role) in ((s, o) for s in naive for o in others):
        machine = rng.lognormal(0.0, 0.3, n_rounds)  # shared by both sides of a round
        base = 1e-6 * n * machine
        out.append(
            {
                "case": case,
                "fast": fast_name,
                "slow": slow_name,
                # As a case declaring both would have them timed (harness.contract.rules.compared_pairs):
                # the rule's pair, and the library over the naive way as context.
                "against": "rule" if role == "optimized" else "context",
                "size": {"n": n},
                "size_label": f"n{n}",
                "x": "n",
                "dtype": dtype,
                "device": device,
                "fast_s": (
                    base * fast_f * slow.get(fast_name, 1.0) * rng.lognormal(0, sigma, n_rounds)
                ).tolist(),
                "slow_s": (
                    base * slow_f * slow.get(slow_name, 1.0) * rng.lognormal(0, sigma, n_rounds)
                ).tolist(),
                "noise_floor": 0.01,
            }
        )
    return out


def rows_for(target: int, cases: int, variants: int = 3, dtypes: int = 1, devices: int = 1) -> int:
    """How many sizes give at least ``target`` rows."""
    return math.ceil(target / (cases * variants * dtypes * devices))


def with_timing_modes(doc: dict, factors: dict[str, float]) -> dict:
    """`doc` as a `--timing-mode all` run writes it on a GPU: each point again per mode, the
    mode in extra_info, its times scaled by the mode's factor."""
    doc = copy.deepcopy(doc)
    extra = []
    for bench in doc["benchmarks"]:
        for mode, factor in factors.items():
            twin = copy.deepcopy(bench)
            twin["extra_info"]["timing_mode"] = mode
            twin["name"] = twin["fullname"] = bench["name"].replace("]", f"-{mode}]")
            twin["stats"]["data"] = [t * factor for t in twin["stats"]["data"]]
            for k in ("min", "max", "mean", "median", "q1", "q3", "iqr", "stddev"):
                if isinstance(twin["stats"].get(k), float):
                    twin["stats"][k] *= factor
            extra.append(twin)
    doc["benchmarks"] += extra
    return doc


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def pooled(tmp_path, name, docs) -> Path:
    """A baseline folder of several runs (the recommended baseline: docs/gate.md)."""
    folder = tmp_path / name
    folder.mkdir()
    for i, doc in enumerate(docs):
        write(folder / f"run{i}.json", doc)
    return folder


class SameShapeLoader:
    """`load.from_documents` for many sets of documents of one shape (the gate's Monte Carlo
    trials: the same cases, variants, sizes and pairs, new rounds each trial). The first set of a
    shape is read by the reports' own loader; a later one reuses its tables with only the rounds
    replaced (each benchmark's ``stats.data``, each pair's ``fast_s``/``slow_s``). Building a
    trial's four tables cost ~1 ms apiece in pandas, most of a trial. The gate reads the rounds,
    never the tables' summary columns, which here stay those of the first set;
    test_model.test_the_same_shape_loader_gates_as_the_loader holds the two to the same lines."""

    def __init__(self):
        self._templates: dict[tuple, object] = {}

    def __call__(self, documents):
        documents = list(documents)
        shape = tuple(
            (str(name), tuple(b["name"] for b in doc["benchmarks"]), len(doc.get("pairs") or ()))
            for name, doc in documents
        )
        template = self._templates.get(shape)
        if template is None:
            template = self._templates[shape] = load.from_documents(documents)
        rounds = [
            np.asarray(b["stats"]["data"], dtype=float) for _, doc in documents for b in doc["benchmarks"]
        ]
        pairs = [p for _, doc in documents for p in doc.get("pairs") or ()]
        if len(rounds) != len(template.rows) or len(pairs) != len(template.pairs):
            raise ValueError(
                "documents of another shape than their template: load them with load.from_documents"
            )
        rows = template.rows.copy()
        rows["data"] = pd.Series(rounds, dtype=object, index=rows.index)
        timed = template.pairs.copy()
        for column, side in (("fast_data", "fast_s"), ("slow_data", "slow_s")):
            timed[column] = pd.Series(
                [np.asarray(p[side], dtype=float) for p in pairs], dtype=object, index=timed.index
            )
        return load.Results(
            rows, template.outcomes, template.runs, template.cases, timed, template.duplicates
        )
