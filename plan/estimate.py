"""Estimate how long a suite run takes before making it, e.g. the full GPU profile where no GPU is
at hand:

    python -m suite.estimate --gpus 1 --reference reports/reference/h100-2026-11-23/points.csv \\
        -- -m gpu --benchmark-only --profile full --device cuda

or, on a machine that has run the suite before, from its own results (compile times included):

    python -m suite.estimate --reference results/gpu.json.gz -- -m gpu --benchmark-only

The plan is the run's own collection (the pytest arguments after ``--``), priced for a machine of
``--gpus`` GPUs (default: this one's): tests that need a GPU cost nothing on a machine without
one, tests marked ``multigpu`` nothing on a machine of fewer than two. Each timed point costs
what `plan.costmodel` says its calls cost at the reference run's median and spread for that
point (scaled by the case's cost model from another size of the same variant where the reference
lacks it), plus a fixed cost per point and the inputs and float64 oracle once per group of
variants (the oracle a multiple of the group's fastest call: the efficient form in float64).
A timed pair costs its interleaved rounds (`plan.costmodel.paired_point`) and a side of a pair
the run times only its own checked calls: its rows come from the pair's rounds
(suite/pair_rounds.py). Rule checks, compiles and process launches cost a fixed time each. Those
fixed costs are parameters, printed with the estimate; docs/time-budget.md ("Time budget") gives the
evidence for them.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
import zlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness.contract import results_schema
from harness.run.progress import COMPILE_PACE_S
from plan import costmodel

ROOT = Path(__file__).resolve().parents[1]
TABLE_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


# A check's and a process launch's cost where --check-s / --launch-s do not say, by device. The CPU's:
# a first quick-profile run on the CI kind of machine (2-core Intel Xeon, AVX-512 and AMX, torch
# 2.13.0+cpu, three fresh clones, 2026-11-27) spent 0.115-0.119 s a rule check, 0.044-0.046 s a
# variant's check and 2.75-2.81 s a launch test (torchrun or mp.spawn, gloo, 1-4 ranks); a launch
# took 4-7 s on the slower 2-core AMD EPYC. CUDA's: ×3 a check (its kernels' launches), and CUDA
# and NCCL start slower. Before, the CUDA prices were every run's: a CPU quick run priced at 9.4 min
# took 3.6.
# Since then a variant's check runs inside its benchmark (plan.checks_run_by_benchmarks), so a CPU
# run's checks are its rule checks: 0.133-0.140 s each in three fresh clones on 2026-11-28 (a
# launch 2.9 s). A CPU compile: the progress line's pace (harness.run.progress.COMPILE_PACE_S). The
# CUDA prices stay the assumptions the GPU estimates of docs/time-budget.md were made with, until a GPU run
# records its own.
CHECK_S = {"cpu": 0.13, "cuda": 0.2}
# A timed point's cost outside its calls, inputs and oracle (its memory pass, the CPU's faulted-pages
# figures in a child process, the recorder): in those three runs 6.9 + 9.4 + 5.1 s over 225 CPU
# points, 0.096 s each; CUDA's the assumption of docs/time-budget.md's GPU estimates.
FIXED_S = {"cpu": 0.1, "cuda": 0.05}
LAUNCH_S = {"cpu": 3.0, "cuda": 20.0}
COMPILE_S = {"cpu": COMPILE_PACE_S, "cuda": 20.0}
# The reference a run without --reference is priced from, by the devices it runs on: the CI
# machine's quick profile (every pair compiled, its compile times included) and the first H100 run.
# With none, every call was priced at --default-call-s: 9 s of calls for 70 measured.
DEFAULT_REFERENCE = {
    "cpu": ROOT / "reports/reference/cpu-xeon-amx-2026-11-23/quick-compiled-all.json.gz",
    "cuda": ROOT / "reports/reference/h100-2026-11-23/points.csv",
}


def _by_device(value: float | None, prices: dict, device: str) -> float:
    if value is not None:
        return value
    return prices.get(str(device).split(":")[0], prices["cuda"])


class BadReference(ValueError):
    """A reference that cannot price a run; the message is one line naming the file and field.
    A median of -1 s or NaN priced its points at nothing: every estimate from it was wrong."""


def _number(value) -> float:
    if isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _time(path, where: str, value) -> float:
    seconds = _number(value)
    if not (seconds > 0 and math.isfinite(seconds)):
        raise BadReference(f"{path}: {where} {value!r:.30}: a time is a positive, finite number of seconds")
    return seconds


def _spread(path, where: str, value, what: str = "a spread") -> float:
    spread = _number(value)
    if not (spread >= 0 and math.isfinite(spread)):
        raise BadReference(f"{path}: {where} {value!r:.30}: {what} is a finite number ≥ 0")
    return spread


def _text(path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise BadReference(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_benchmark_log(path) -> dict[str, tuple[float, float]]:
    """{param id: (median seconds, relative spread)} from pytest-benchmark's terminal tables in a
    saved log (the H100 run kept logs, not JSON). Spread: IQR/1.349 over the median, a σ that
    outliers do not inflate."""
    out, unit = {}, None
    for number, line in enumerate(_text(path).splitlines(), 1):
        header = re.match(r"Name \(time in (\w+)\)", line)
        if header:
            unit = TABLE_UNIT.get(header.group(1))
            if unit is None:
                raise BadReference(f"{path}: line {number}: unknown time unit {header.group(1)!r:.20}")
            continue
        row = re.match(r"test_\w+\[([^\]]+)\]\s+(.*)", line)
        if not (row and unit):
            continue
        values = [t for t in row.group(2).split() if not t.startswith("(")]
        if len(values) < 10:
            continue
        where = f"line {number} ({row.group(1):.60})"
        median = _time(path, f"{where}: Median", _number(values[4].replace(",", "")) * unit)
        iqr = _spread(path, f"{where}: IQR", _number(values[5].replace(",", "")) * unit)
        out[row.group(1)] = (median, iqr / 1.349 / median)
    return out


def read_reference(path) -> dict[str, tuple[float, float]]:
    """{id: (median_s, spread)} from a points CSV (columns id, median_s, spread)."""
    rows = csv.DictReader(io.StringIO(_text(path), newline=""))
    missing = [c for c in ("id", "median_s", "spread") if c not in (rows.fieldnames or [])]
    if missing:
        raise BadReference(f"{path}: no {', '.join(missing)} column (a points CSV has id, median_s, spread)")
    out = {}
    for row in rows:
        where = f"line {rows.line_num} ({str(row['id']):.60})"
        out[row["id"]] = (
            _time(path, f"{where}: median_s", row["median_s"]),
            _spread(path, f"{where}: spread", row["spread"]),
        )
    return out


def _document(path) -> dict:
    """A results document, gzip-compressed or not (told by its first bytes), as the reports read
    it: what cannot be read, or does not fit the results schema, is one line naming the file (and
    the field)."""
    try:
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except OSError as exc:
        raise BadReference(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise BadReference(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    if not text.strip():
        raise BadReference(f"{path}: empty file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadReference(f"{path}: not valid JSON, truncated? ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise BadReference(f"{path}: JSON nested too deeply to be a results file") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4300)
        raise BadReference(f"{path}: not a results file ({str(exc).split(':')[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise BadReference(f"{path}: not a suite results file (no 'benchmarks' list)")
    # The one schema of the results (harness/contract/results.schema.json), as the reports check it.
    wrong = results_schema.problem(doc)
    if wrong is not None:
        raise BadReference(f"{path}: {wrong}")
    return doc


def read_results(path) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """({param id: (median seconds, relative spread)}, {param id: compile seconds}) from a suite
    results JSON (.json or .json.gz, partial runs too): a machine's own earlier run calibrates the
    estimate of its next one, compiles included. A benchmark without a median (it never finished)
    prices nothing."""
    points, compiles = {}, {}
    for i, bench in enumerate(_document(path)["benchmarks"]):
        if not isinstance(bench, dict):
            raise BadReference(f"{path}: benchmarks[{i}] is not an object")
        stats, extra = bench.get("stats") or {}, bench.get("extra_info") or {}
        if not isinstance(stats, dict) or not isinstance(extra, dict):
            raise BadReference(f"{path}: benchmarks[{i}]: stats or extra_info is not an object")
        if stats.get("median") is None:
            continue
        param = bench.get("param")
        if not isinstance(param, str):
            raise BadReference(f"{path}: benchmarks[{i}]: param {param!r:.30} is not a point id")
        where = f"benchmarks[{i}] ({param:.60})"
        median = _time(path, f"{where}: stats.median", stats["median"])
        iqr = _spread(path, f"{where}: stats.iqr", stats.get("iqr", 0.0))
        points[param] = (median, iqr / 1.349 / median)
        if extra.get("compile_s") is not None:
            compiles[param] = _spread(
                path, f"{where}: extra_info.compile_s", extra["compile_s"], "a compile time"
            )
    return points, compiles


def read_references(paths) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """Every --reference, by its name: a points CSV, a results JSON, else a saved log."""
    reference: dict[str, tuple[float, float]] = {}
    compiles: dict[str, float] = {}
    for path in paths:
        if str(path).endswith(".csv"):
            reference.update(read_reference(path))
        elif str(path).endswith((".json", ".json.gz")):
            points, compiled = read_results(path)
            reference.update(points)
            compiles.update(compiled)
        else:
            reference.update(read_benchmark_log(path))
    return reference, compiles


@dataclass(frozen=True)
class Planned:
    """One collected test, the markers the suite gave it (gpu, multigpu, compiled, ...) and whether
    the run's options skip it whatever the machine (pytest-benchmark's --benchmark-only)."""

    nodeid: str
    markers: frozenset[str]
    not_a_benchmark_skipped: bool
    case: str  # its catalogue ID, from the point the run records for it ("" for none)
    test: str  # the test function (test_benchmark, test_rule, test_pair, ...)
    point: object = None  # the plan point it was parametrised with (plan.VariantPoint, ...), if any


def pytest_args_for(pytest_args: list[str], gpus: int) -> list[str]:
    """The run's pytest arguments as the machine it is for would take them: without ``--device``
    a run defaults to the devices present, so on a machine of `gpus` ≥ 1 it has CUDA points this
    machine would not collect (``--gpus 1`` on a CPU-only machine priced the quick GPU run at
    0.1 min: its CPU points only)."""
    given = any(a == "--device" or a.startswith("--device=") for a in pytest_args)
    return pytest_args if given or gpus < 1 else [*pytest_args, "--device", "cpu,cuda"]


# Totals' fields as printed, per case: counts, then seconds.
COLUMNS = {
    "points": "points",
    "unreferenced": "no-ref",
    "skipped": "skipped",
    "calls_s": "calls (s)",
    "fixed_s": "fixed (s)",
    "oracle_s": "oracle (s)",
    "compile_s": "compile(s)",
    "checks_s": "checks (s)",
}


@dataclass
class Totals:
    points: int = 0
    calls_s: float = 0.0
    fixed_s: float = 0.0
    oracle_s: float = 0.0
    compile_s: float = 0.0
    checks_s: float = 0.0
    unreferenced: int = 0  # timed points the reference lacked: scaled from another size, or defaulted
    skipped: int = 0  # too big for the device's memory, needing more GPUs than it has, not compilable

    @property
    def total(self) -> float:
        return self.calls_s + self.fixed_s + self.oracle_s + self.compile_s + self.checks_s


def _itemsize(point) -> int:
    import torch

    return torch.empty((), dtype=point.dtype).element_size()


def _cost_scaled(point, reference) -> float | None:
    """The call time of another size of the same variant, dtype and device, scaled by the cost
    model (flops, else bytes) to this size; None when there is neither."""
    comparison, variant = point.comparison, point.variant
    itemsize = _itemsize(point)

    def cost(size):
        return comparison.flops_of(variant, size) or comparison.bytes_of(variant, size, itemsize)

    here = cost(point.size)
    for profile in ("full", "quick"):
        for size in reversed(comparison.sizes_for(profile)):
            other = type(point)(
                point.case, point.variant_name, size, point.dtype, point.device, part=point.part
            )
            if other.id in reference and here and cost(size):
                return reference[other.id][0] * here / cost(size)
    return None


def _too_big(point, memory_gib: float) -> bool:
    """As plan.oversize_reason on a device of `memory_gib` (90% of it usable)."""
    if point.variant.peak_bytes is None:
        return False
    itemsize = _itemsize(point)
    return point.variant.peak_bytes(point.size, itemsize) > 0.9 * memory_gib * 2**30


def estimate(plan: list[Planned], reference, args, compiles=None) -> dict[str, Totals]:
    """Seconds per case of the planned run. `reference`: {id: (median s, spread)}; `compiles`:
    {id: measured compile s} (a results JSON's), else `args.compile_s`/`args.autotune_s` each."""
    compiles = compiles or {}
    from plan import CheckPoint, LaunchPoint, PairPoint, VariantPoint, timed_in_pairs

    def priced(planned: Planned) -> bool:
        return not (
            planned.not_a_benchmark_skipped
            or ("gpu" in planned.markers and args.gpus < 1)
            or ("multigpu" in planned.markers and args.gpus < 2)
        )

    def call_of(point) -> tuple[float, float, bool]:
        """(call seconds, spread, from the reference itself) of a variant point."""
        if point.id in reference:
            return (*reference[point.id], True)
        return _cost_scaled(point, reference) or args.default_call_s, args.default_spread, False

    # A side of a pair the run times takes its rows from the pair's rounds (suite/pair_rounds.py).
    pairs = [p.point for p in plan if p.test == "test_pair" and isinstance(p.point, PairPoint) and priced(p)]
    paired = timed_in_pairs(pairs)
    by_case: dict[str, Totals] = defaultdict(Totals)
    group_call: dict[tuple, float] = {}  # the fastest variant's call per group
    for planned in plan:
        point = planned.point
        totals = by_case[planned.case or planned.test]
        if planned.not_a_benchmark_skipped:
            continue  # e.g. variant checks under --benchmark-only: each benchmark checks its own
        if "gpu" in planned.markers and args.gpus < 1:
            totals.skipped += 1  # skipped with "CUDA not available" (harness.machine.requirements)
            continue
        if "multigpu" in planned.markers and args.gpus < 2:
            totals.skipped += 1  # skipped with "needs >= 2 GPUs" (harness.machine.requirements)
            continue
        if planned.test == "test_pair" and isinstance(point, PairPoint):
            if point.device == "cuda" and any(_too_big(side, args.memory_gib) for side in point.sides):
                totals.skipped += 1
                continue
            sides = [call_of(side)[:2] for side in point.sides]
            totals.calls_s += costmodel.paired_point(sides, device=point.device, cap_s=args.cap_s).seconds
        elif planned.test == "test_benchmark" and isinstance(point, VariantPoint):
            param = point.id
            if point.device == "cuda" and _too_big(point, args.memory_gib):
                totals.skipped += 1  # skipped before it is tried (plan.oversize_reason)
                continue
            compiled = point.variant.role.value == "compiled"
            if compiled and point.comparison.uncompilable.get(point.compiled_from):
                totals.skipped += 1  # "not compiled: <reason>" (harness.point.variant_benchmark)
                continue
            call_s, spread, referenced = call_of(point)
            totals.unreferenced += not referenced
            device = point.device
            if point.timing == "warm" and param in paired:
                cost = costmodel.replayed_point(call_s, device=device)
            else:
                cost = costmodel.timed_point(call_s, spread, device=device, cap_s=args.cap_s)
            totals.points += 1
            totals.calls_s += cost.seconds
            totals.fixed_s += _by_device(args.fixed_s, FIXED_S, device)
            if compiled:
                autotune = point.variant_name.endswith("_max_autotune")
                default = args.autotune_s if autotune else _by_device(args.compile_s, COMPILE_S, device)
                totals.compile_s += compiles.get(param, default)
            group = (point.case.id, point.size_label, point.dtype, device)
            group_call[group] = min(group_call.get(group, call_s), call_s)
        elif isinstance(point, CheckPoint) and "compiler" in point.requires:  # a cold torch.compile
            totals.compile_s += _by_device(args.compile_s, COMPILE_S, point.device)
        elif isinstance(point, LaunchPoint):  # a torchrun launch
            totals.checks_s += _by_device(args.launch_s, LAUNCH_S, point.device)
        else:  # a rule check, a variant check without --benchmark-only, a flags test
            totals.checks_s += _by_device(args.check_s, CHECK_S, getattr(point, "device", "cpu"))
    for (case, *_), call_s in group_call.items():
        by_case[case].oracle_s += args.group_s + args.oracle_factor * call_s
    return dict(by_case)
