"""Read pytest-benchmark JSON files into tidy tables, or fail with one line naming the file.

Three tables come out of a set of files (`Results`):

* ``rows`` — one row per case × variant × size × dtype × device × run, columns in the field order
  of `ResultRow` (that order *is* the documented column order of results.csv), plus a ``data``
  column holding each row's per-round times (numpy arrays, never written to CSV);
* ``outcomes`` — every suite test's outcome (passed/failed/skipped, reason, finding and the
  notes' errata it found) per run;
* ``pairs`` — every pair timed side by side (harness.contract.record.PairTiming), with both sides'
  per-round times (``fast_data``, ``slow_data``: numpy arrays, never written to CSV);
* ``runs`` — one row per file: machine label, versions, profile, ceilings, whether it is partial;
* ``cases`` — per machine, the declarations the runs recorded (claim, tier, rule): a file is judged
  by the rules it was measured under (`harness.contract.record`).

The suite's part of each file is read through `harness.contract.record`, the one schema of the results.

Results are grouped by machine label (``machine_info.torch.label``) everywhere downstream; the
label here is extended with the torch and CUDA versions so that two torch builds on one box are
never mixed in one speedup either.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd

from harness.contract import record, results_schema, rounds, upgrade


class ResultsError(Exception):
    """A results file that cannot be used; the message is one line and names the file."""


@dataclass
class ResultRow:
    """One timed variant point of one run. Field order = results.csv column order."""

    machine: str  # machine label + torch/CUDA versions: the grouping key, never mixed
    run: str  # the file's name (one pytest-benchmark run)
    datetime: str
    case: str
    tier: int | None  # from extra_info; blank when the run did not record it
    variant: str
    role: str
    part: str  # the case's part ("" for its own comparison): reports never compare across parts
    size_label: str
    x_name: str
    x: float  # the value of the size parameter on the plots' x axis
    dtype: str
    device: str
    rounds: int
    median_s: float
    q1_s: float
    q3_s: float
    iqr_s: float
    spread: float  # IQR / median; a point over harness.contract.rounds.SPREAD_LIMIT is flagged `noisy`
    noisy: bool
    min_s: float
    mean_s: float
    stddev_s: float
    peak_bytes: float
    max_abs_err: float
    max_rel_err: float
    flops: float
    bytes: float
    gflops_per_s: float  # flops / median, where the case declares a cost model
    gb_per_s: float
    flops_ceiling: float  # the machine's measured ceiling for this device and dtype, if recorded
    copy_ceiling: float
    flops_fraction: float  # achieved FLOP/s ÷ ceiling (roofline fraction)
    bandwidth_fraction: float
    extra: str  # the case's extra metrics (extra_info keys beyond the standard ones), as JSON
    # Last, so the columns before it keep their places for readers of older results.csv files.
    compiled_from: str  # a compiled twin's naive variant, "" otherwise (and in older results files)
    # The GPU timing mode that timed the row (harness.measure.timing: warm, cold_l2, graph): part of every
    # key, so the modes of one variant are never pooled into one sample. "warm" in older files.
    timing_mode: str
    # The δ floor the run recorded (harness.contract.record.RunInfo.delta_floor): the band a row is
    # judged with is never narrower than the one it was written under.
    delta_floor: float
    # The same variant timed with every large temporary's pages faulted on each call
    # (harness.measure.faulted_pages), beside median_s's settled heap; NaN where it was not.
    faulted_median_s: float
    faulted_iqr_s: float
    faulted_busy: str  # why the machine was too busy for it to mean anything ("" when quiet): then no figure


COLUMNS = [f.name for f in fields(ResultRow)]
PAIR_COLUMNS = [
    "machine",
    "run",
    *record.KEY_COLUMNS,
    "part",
    "fast",
    "slow",
    "against",
    "x_name",
    "x",
    "identical",
    "noise_floor",
    "busy",
    "fast_data",
    "slow_data",
    # Each side's GPU-only seconds per call (a CUDA-graph replay, harness.measure.graph_figure);
    # NaN on the CPU, for a side that could not be captured, and in files before it was recorded.
    "fast_graph_s",
    "slow_graph_s",
]
_CEILING_KEY = {"float32": "fp32_flops", "bfloat16": "bf16_flops", "float16": "fp16_flops"}


@dataclass
class Results:
    rows: pd.DataFrame  # COLUMNS + "data" (per-round seconds, numpy arrays)
    outcomes: pd.DataFrame
    runs: pd.DataFrame
    cases: dict[str, dict[str, record.CaseInfo]] = field(default_factory=dict)  # machine → ID → as recorded
    pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PAIR_COLUMNS))
    # (path, the path of the same run read first): one run reached twice (a link, a copy) counts once.
    duplicates: list[tuple[str, str]] = field(default_factory=list)

    def cases_of(self, machine: str | None = None) -> dict[str, record.CaseInfo]:
        """The declarations of one machine's runs, or of every run (later files win)."""
        if machine is not None:
            return self.cases.get(machine, {})
        merged: dict[str, record.CaseInfo] = {}
        for per_machine in self.cases.values():
            merged.update(per_machine)
        return merged


def group_positions(frame: pd.DataFrame, keys: list[str]) -> list[tuple[tuple, np.ndarray]]:
    """(key, row positions) per group of `frame` by `keys`, groups in the order they first appear,
    rows with a missing key left out: what `frame.groupby(keys, sort=False).indices` gives. Read
    off the columns in one pass; pandas' groupby builds an index per call, which on the tens of
    rows a run holds per table costs more than the grouping (the gate groups every run's tables
    for each comparison)."""
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(*(frame[k].tolist() for k in keys))):
        if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in key):
            continue
        groups.setdefault(key, []).append(i)
    return [(key, np.asarray(idx, dtype=np.intp)) for key, idx in groups.items()]


def collect_paths(args) -> list[Path]:
    """Files and folders (searched recursively for *.json and *.json.gz) → the files, sorted."""
    if not args:
        raise ResultsError("no results given: pass JSON files or folders of them")
    paths: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = sorted([*path.rglob("*.json"), *path.rglob("*.json.gz")])
            if not found:
                raise ResultsError(f"{path}: folder holds no .json or .json.gz results")
            paths.extend(found)
        elif path.is_file():
            paths.append(path)
        else:
            raise ResultsError(f"{path}: no such file or folder")
    return paths


def read_json(path: Path) -> dict:
    """A results document; gzip-compressed (a committed reference run, ``.json.gz``) or not, told
    by its first bytes rather than its name; checked against the results schema
    (`harness.contract.results_schema`): a field of the wrong type or range is one line naming the
    file and the field's JSON path."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ResultsError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    if not text.strip():
        raise ResultsError(f"{path}: empty file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON, truncated? ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested too deeply to be a results file") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4300)
        raise ResultsError(f"{path}: not a results file ({str(exc).split(':')[0]})") from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("benchmarks"), list)
        or not isinstance(doc.get("machine_info"), dict)
    ):
        raise ResultsError(f"{path}: not a pytest-benchmark result (no 'benchmarks' list and 'machine_info')")
    for field_name in ("commit_info", "suite"):
        if doc.get(field_name) is not None and not isinstance(doc[field_name], dict):
            raise ResultsError(f"{path}: {field_name} is not an object")
    # Every field the reports read, against the results' one schema (harness/contract/results.schema.json).
    wrong = results_schema.problem(doc)
    if wrong is not None:
        raise ResultsError(f"{path}: {wrong}")
    return doc


def cpu_isa(cpu_detail) -> str:
    """The vector units a CPU run used: torch's CPU capability (AVX2, AVX512), "+ AMX" where the
    CPU has AMX tiles. Two CPUs of one model name can differ here (these CI machines do: some have
    AMX, some only AVX-512), and the premises of precision.tf32 and precision.amp turn on it."""
    if not isinstance(cpu_detail, dict):
        return ""
    features = cpu_detail.get("features") if isinstance(cpu_detail.get("features"), dict) else {}
    isa = str(cpu_detail.get("capability") or "")
    if not isa or isa == "DEFAULT":
        isa = "AVX512" if features.get("avx512f") else ("AVX2" if features.get("avx2") else isa)
    if features.get("amx_bf16") or features.get("amx_tile"):
        isa = f"{isa} + AMX" if isa else "AMX"
    return isa


def machine_key(torch_info: dict) -> str:
    """Runs are pooled, and speed-ups compared by the gate, only within one key. A CPU-only machine
    is named with its vector units too: the same model name with and without AMX gives different
    kernels and premises. (A GPU box is named by its GPU; its CPU points are secondary there.)"""
    label = torch_info.get("label") or "unlabelled machine"
    gpu = torch_info.get("gpu") if isinstance(torch_info.get("gpu"), dict) else {}
    isa = "" if gpu.get("count") else cpu_isa(torch_info.get("cpu_detail"))
    if isa:
        label = f"{label}, {isa}"
    versions = f"torch {torch_info.get('torch_version', '?')}"
    if torch_info.get("cuda_version"):
        versions += f", CUDA {torch_info['cuda_version']}"
    return f"{label} · {versions}"


def _num(value) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _faulted(figure) -> dict:
    """The faulted-pages figure's columns; NaN where there is none, it says why not, or the load
    probe found the machine busy while it was timed (noise is not a figure: the reason is kept)."""
    figure = figure if isinstance(figure, dict) else {}
    median, iqr = _num(figure.get("median_s")), _num(figure.get("iqr_s"))
    busy = str(figure.get("busy") or "")
    if busy or not (math.isfinite(median) and median > 0):
        median = iqr = math.nan
    return {"faulted_median_s": median, "faulted_iqr_s": iqr, "faulted_busy": busy}


def _benchmark_row(bench: dict, run: dict, path: Path) -> tuple[dict, np.ndarray] | None:
    info = bench.get("extra_info") or {}
    try:
        split = record.BenchmarkInfo.split(info)
    except record.RecordError as exc:
        raise ResultsError(f"{path}: benchmark {bench.get('name', '?')!r:.80}: {exc}") from None
    if split is None:
        return None  # a benchmark outside the suite (e.g. a harness unit test): not a case result
    point, extra = split
    stats = bench.get("stats")
    if not isinstance(stats, dict) or "median" not in stats:
        raise ResultsError(f"{path}: benchmark {bench.get('name', '?')!r} has no stats")
    try:
        data = np.asarray(stats.get("data") or [], dtype=float)
    except (TypeError, ValueError):
        raise ResultsError(
            f"{path}: benchmark {bench.get('name', '?')!r}: stats.data is not a list of numbers"
        ) from None
    size = point.size or {}
    x_name = point.x or (next(iter(size)) if size else "")
    median = _num(stats["median"])
    if not (math.isfinite(median) and median > 0) or (
        data.size and not (np.isfinite(data).all() and (data > 0).all())
    ):
        # A time that is zero, negative, infinite or NaN is a broken timer or a hostile file: judging
        # it would turn it into a speed-up or a regression.
        raise ResultsError(
            f"{path}: benchmark {bench.get('name', '?')!r}: impossible time "
            f"(median {stats['median']!r:.30}); times must be positive and finite"
        )
    iqr = _num(stats.get("iqr"))
    if "iqr" in stats and not (math.isfinite(iqr) and iqr >= 0):
        raise ResultsError(
            f"{path}: benchmark {bench.get('name', '?')!r}: stats.iqr is {stats.get('iqr')!r:.30}; "
            "a spread is a finite number ≥ 0"
        )
    flops, moved, dtype, device = _num(point.flops), _num(point.bytes), point.dtype, point.device
    ceilings = (run["ceilings"] or {}).get(device, {}) if isinstance(run["ceilings"], dict) else {}
    if not isinstance(ceilings, dict):
        raise ResultsError(f"{path}: machine_info.torch.ceilings.{device} is not an object")
    for key, value in ceilings.items():
        if not (_num(value) > 0 and math.isfinite(_num(value))):
            raise ResultsError(
                f"{path}: machine_info.torch.ceilings.{device}.{key} {value!r:.30} is not a positive number"
            )
    # The ceiling the run itself chose (harness.machine.ceilings.gemm_key: TF32 where it was in force on
    # CUDA); files written before it was recorded fall back to the dtype's own ceiling.
    ceiling_key = extra.get("ceiling_key") or _CEILING_KEY.get(dtype, "")
    flops_ceiling = _num(ceilings.get(str(ceiling_key), None))
    copy_ceiling = _num(ceilings.get("copy_bytes_per_s"))
    rate = flops / median if median > 0 else math.nan
    bandwidth = moved / median if median > 0 else math.nan
    row = dict(
        machine=run["machine"],
        run=run["run"],
        datetime=run["datetime"],
        case=str(point.case),
        tier=_num(point.tier),
        variant=str(point.variant if point.variant != "?" else bench.get("name", "?")),
        role=str(point.role),
        compiled_from=str(point.compiled_from or ""),
        part=str(point.part or ""),
        size_label=str(point.size_label),
        x_name=str(x_name),
        x=_num(size.get(x_name)),
        dtype=str(dtype),
        device=str(device),
        rounds=int(stats.get("rounds") or len(data)),
        median_s=median,
        q1_s=_num(stats.get("q1")),
        q3_s=_num(stats.get("q3")),
        iqr_s=iqr,
        spread=iqr / median if median > 0 else math.nan,
        noisy=bool(median > 0 and iqr / median > rounds.SPREAD_LIMIT),
        min_s=_num(stats.get("min")),
        mean_s=_num(stats.get("mean")),
        stddev_s=_num(stats.get("stddev")),
        peak_bytes=_num(point.peak_bytes),
        max_abs_err=_num(point.max_abs_err),
        max_rel_err=_num(point.max_rel_err),
        flops=flops,
        bytes=moved,
        gflops_per_s=rate / 1e9,
        gb_per_s=bandwidth / 1e9,
        flops_ceiling=flops_ceiling,
        copy_ceiling=copy_ceiling,
        flops_fraction=rate / flops_ceiling,
        bandwidth_fraction=bandwidth / copy_ceiling,
        extra=json.dumps(extra, sort_keys=True, default=str) if extra else "",
        timing_mode=str(extra.get("timing_mode") or "warm"),
        delta_floor=run["delta_floor"],
        **_faulted(extra.get("faulted_pages")),
    )
    if data.size == 0:
        data = np.array([median])  # saved without --benchmark-save-data: the median stands alone
    return row, data


def load(args) -> Results:
    return from_documents((path, read_json(path)) for path in collect_paths(args))


def from_documents(documents) -> Results:
    """`load` of results documents already read: (path, document) pairs, the path naming the run
    (the gate's statistical tests build thousands of runs in memory and skip the disk)."""
    rows, datas, outcomes, runs, pairs = [], [], [], [], []
    cases: dict[str, dict[str, record.CaseInfo]] = {}
    names = {}
    seen: dict[str, str] = {}
    duplicates = []
    for path, doc in documents:
        path = Path(path)
        # A run is identified by its content, not its path: a link or a copy of one run read twice
        # would count as two runs of the same code (its σ 0, its interval too narrow).
        identity = hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
        if identity in seen:
            duplicates.append((str(path), seen[identity]))
            continue
        seen[identity] = str(path)
        torch_info = doc["machine_info"].get("torch") or {}
        if not isinstance(torch_info, dict):
            raise ResultsError(f"{path}: machine_info.torch is not an object")
        try:
            doc = upgrade.to_current(doc)
            suite_part = record.read_run(doc)
        except record.RecordError as exc:
            raise ResultsError(f"{path}: {exc}") from None
        name = path.name if path.name not in names else str(path)
        names[path.name] = path
        gpu = torch_info.get("gpu") or {}
        run = dict(
            run=name,
            path=str(path),
            machine=machine_key(torch_info),
            label=torch_info.get("label", ""),
            datetime=str(doc.get("datetime", "")),
            torch_version=torch_info.get("torch_version", ""),
            cuda_version=torch_info.get("cuda_version") or "",
            gpu_name=gpu.get("name", ""),
            gpu_count=gpu.get("count", 0),
            ceilings=torch_info.get("ceilings"),
            profile=suite_part.info.profile,
            machine_info=torch_info,
            commit=(doc.get("commit_info") or {}).get("id", ""),
            # The version the file was written in, which the upgrade on reading does not change.
            schema_version=suite_part.info.upgraded_from or suite_part.info.schema_version,
            partial=suite_part.info.partial,
            partial_reason=suite_part.info.partial_reason,
            delta_floor=suite_part.info.delta_floor,
        )
        runs.append(run)
        cases.setdefault(run["machine"], {}).update(suite_part.cases)
        for bench in doc["benchmarks"]:
            if not isinstance(bench, dict):
                raise ResultsError(f"{path}: a benchmarks[] entry is not an object")
            got = _benchmark_row(bench, run, path)
            if got is not None:
                rows.append(got[0])
                datas.append(got[1])
        for o in suite_part.outcomes:
            outcomes.append(
                dict(
                    machine=run["machine"],
                    run=name,
                    case=o.case,
                    kind=o.kind,
                    name=o.name,
                    part=o.part,
                    size_label=o.size_label,
                    dtype=o.dtype,
                    device=o.device,
                    outcome=o.outcome,
                    reason=o.reason,
                    error_type=o.error_type,
                    verdict=o.finding.verdict.value if o.finding and o.finding.verdict else None,
                    evidence=o.finding.evidence if o.finding else "",
                    errata=tuple(o.finding.errata) if o.finding else (),
                    nodeid=o.nodeid,
                )
            )
        for p in suite_part.pairs:
            x_name = p.x or (next(iter(p.size)) if p.size else "")
            pairs.append(
                dict(
                    machine=run["machine"],
                    run=name,
                    case=p.case,
                    part=p.part,
                    fast=p.fast,
                    slow=p.slow,
                    against=p.against,
                    size_label=p.size_label,
                    x_name=x_name,
                    x=_num(p.size.get(x_name)),
                    dtype=p.dtype,
                    device=p.device,
                    identical=p.identical,
                    noise_floor=_num(p.noise_floor),
                    busy=(p.load or {}).get("busy") or "",
                    fast_data=np.asarray(p.fast_s, dtype=float),
                    slow_data=np.asarray(p.slow_s, dtype=float),
                    fast_graph_s=_num(p.graph_s.get(p.fast)),
                    slow_graph_s=_num(p.graph_s.get(p.slow)),
                )
            )
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["tier"] = table["tier"].astype("Int64")  # blank, not NaN or 1.0, in the CSV
    table["data"] = pd.Series(datas, dtype=object, index=table.index) if datas else pd.Series(dtype=object)
    out_cols = [
        "machine",
        "run",
        *record.KEY_COLUMNS,
        "kind",
        "name",
        "part",
        "outcome",
        "reason",
        "error_type",
        "verdict",
        "evidence",
        "errata",
        "nodeid",
    ]
    return Results(
        table,
        pd.DataFrame(outcomes, columns=out_cols),
        pd.DataFrame(runs),
        cases,
        pd.DataFrame(pairs, columns=PAIR_COLUMNS),
        duplicates,
    )
