"""Estimate how long a suite run takes before making it (the plan priced by `plan.estimate`), e.g.
the full GPU profile where no GPU is at hand:

    python -m suite.estimate --gpus 1 --reference reports/reference/h100-2026-11-23/points.csv \\
        -- -m gpu --benchmark-only --profile full --device cuda

or, on a machine that has run the suite before, from its own results (compile times included):

    python -m suite.estimate --reference results/gpu.json.gz -- -m gpu --benchmark-only

The plan is the run's own collection (the pytest arguments after ``--``: suite.collection), priced
for a machine of ``--gpus`` GPUs (default: this one's); how each test is priced is
`plan.estimate`'s, and docs/time-budget.md ("Time budget") gives the evidence for its fixed costs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from harness.machine import premises
from plan.estimate import (
    COLUMNS,
    DEFAULT_REFERENCE,
    ROOT,
    BadReference,
    Totals,
    estimate,
    pytest_args_for,
    read_references,
)
from suite.collection import collect


def _option(kind: type, low: float, *, above: bool, what: str):
    """An argparse type: a finite `kind` above (or at least) `low`, else a usage error naming the
    range. argparse took --gpus -1 and --memory-gib -5 and priced a run that cannot happen."""

    def value(text: str):
        try:
            number = kind(text)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and (number > low if above else number >= low)):
            raise argparse.ArgumentTypeError(f"{text!r}: use {what}")
        return number

    value.__name__ = kind.__name__  # argparse names the type in its own messages
    return value


SECONDS = _option(float, 0.0, above=True, what="a positive, finite number of seconds")
COST = _option(float, 0.0, above=False, what="a finite number ≥ 0")
GIB = _option(float, 0.0, above=True, what="a positive, finite number of GiB")
GPUS = _option(int, 0, above=False, what="a whole number of GPUs ≥ 0")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.estimate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--reference",
        action="append",
        default=[],
        help="points CSV (id,median_s,spread), a suite results JSON (.json, .json.gz) or a saved log "
        "(default: DEFAULT_REFERENCE, the CI machine's run, and the H100 run's where --gpus is 1 or more)",
    )
    parser.add_argument(
        "--cap-s", type=SECONDS, default=1.0, help="per-point round cap (--benchmark-max-time)"
    )
    parser.add_argument(
        "--fixed-s",
        type=COST,
        default=None,
        help="per timed point outside its calls (default by the point's device: FIXED_S)",
    )
    parser.add_argument("--group-s", type=COST, default=0.05, help="per group: garbage collection, inputs")
    parser.add_argument(
        "--oracle-factor", type=COST, default=4.0, help="float64 oracle / fastest variant's call"
    )
    parser.add_argument(
        "--check-s", type=COST, default=None, help="per check (default by the check's device: CHECK_S)"
    )
    parser.add_argument(
        "--launch-s",
        type=COST,
        default=None,
        help="per process launch, the distributed tests' (default by the launch's device: LAUNCH_S)",
    )
    parser.add_argument(
        "--compile-s",
        type=COST,
        default=None,
        help="per torch.compile (default mode), the jit compile test's too (default by the "
        "compile's device: COMPILE_S)",
    )
    parser.add_argument("--autotune-s", type=COST, default=120.0, help="per max-autotune compile")
    parser.add_argument("--memory-gib", type=GIB, default=80.0, help="the device's memory (an H100: 80)")
    parser.add_argument(
        "--gpus",
        type=GPUS,
        default=None,
        help="GPUs on the machine the run is for (default: this machine's): tests that need a GPU "
        "skip at 0, multigpu tests below 2",
    )
    parser.add_argument(
        "--default-call-s", type=SECONDS, default=1e-3, help="a point with no reference at all"
    )
    parser.add_argument("--default-spread", type=COST, default=0.02)
    parser.add_argument("pytest_args", nargs="*", help="the run's pytest arguments, after --")
    args = parser.parse_args(argv)
    if args.gpus is None:
        args.gpus = premises.gpu_count()
    defaulted = not args.reference
    if defaulted:
        args.reference = [DEFAULT_REFERENCE["cpu"], *([DEFAULT_REFERENCE["cuda"]] if args.gpus else [])]
    try:  # before the plan is collected: a bad file is found in a second, not after the collection
        reference, compiles = read_references(args.reference)
    except BadReference as exc:
        print(f"suite.estimate: {exc}", file=sys.stderr)
        return 2
    by_case = estimate(collect(pytest_args_for(args.pytest_args, args.gpus)), reference, args, compiles)
    print(f"{'case':28} " + " ".join(f"{header:>10}" for header in COLUMNS.values()))
    total = Totals()
    for case, t in [*sorted(by_case.items()), ("total", total)]:
        if case != "total":
            for name in COLUMNS:
                setattr(total, name, getattr(total, name) + getattr(t, name))
        print(
            f"{case:28} "
            + " ".join(
                f"{getattr(t, c):10.1f}" if c.endswith("_s") else f"{getattr(t, c):10d}" for c in COLUMNS
            )
        )
    print(
        "points: timed points priced; no-ref: of those, the ones the reference lacked (scaled from "
        f"another size, else {args.default_call_s:g} s a call)\nskipped: not run on a machine of "
        f"{args.gpus} GPU(s) of {args.memory_gib:g} GiB (--gpus, --memory-gib), or not compilable"
    )
    if defaulted:
        named = ", ".join(str(Path(p).relative_to(ROOT)) for p in args.reference)
        print(f"reference: {named} (the default; --reference a results file of this machine prices closer)")
    without = total.total - total.compile_s
    print(f"estimate: {total.total / 60:.1f} min; without compiles {without / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
