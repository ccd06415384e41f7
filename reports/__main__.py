"""``python -m reports build RESULTS... [--out DIR]`` and ``python -m reports gate --baseline B --current C``.

Exit status: 0 success (gate: no regression); 1 the gate found a regression or a failed check,
and nothing else; 2 bad input, with a one-line message naming the file on stderr; 3 the gate could
not judge a pair (unstable in the run and every recheck; ``--allow-unjudged`` passes it); 4 an
internal error of the reports (a bug: the message says how to see the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from reports.load import ResultsError

DEFAULT_OUT = Path("reports") / "out"  # under the current directory, never inside the installed package


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="results JSON → results.csv, summary.csv, PNGs, index.html")
    build.add_argument("results", nargs="*", help="pytest-benchmark JSON files or folders of them")
    build.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output folder (default ./{DEFAULT_OUT}); a folder holding other files, or the results read, "
        "is refused",
    )
    gate = sub.add_parser("gate", help="fail (exit 1) on a significant drop of within-run speedups")
    gate.add_argument("--baseline", required=True, help="results JSON of the stored baseline run")
    gate.add_argument("--current", required=True, help="results JSON of this run")
    gate.add_argument(
        "--tolerance",
        type=float,
        default=0.10,
        help="allowed drop of a speedup (fraction, default 0.10); a case's gate_tolerance overrides it",
    )
    gate.add_argument(
        "--absolute",
        action="store_true",
        help="also fail when a variant's median time rose by more than the tolerance (fixed runner)",
    )
    gate.add_argument(
        "--recheck",
        action="append",
        default=[],
        metavar="RESULTS",
        help="a re-measurement of the suspects; a regression must show in every one to fail",
    )
    gate.add_argument(
        "--suspects", metavar="FILE", help="write a pytest -k expression of the regressed cases"
    )
    gate.add_argument(
        "--allow-unjudged",
        action="store_true",
        help="exit 0 instead of 3 when a pair could not be judged (unstable in the run and every recheck)",
    )
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            from reports.build import build

            start = time.perf_counter()
            index = build(args.results, args.out)
            print(f"report built in {time.perf_counter() - start:.1f} s: {index}")
            return 0
        from reports.gate import run

        code, text = run(
            args.baseline,
            args.current,
            tolerance=args.tolerance,
            absolute=args.absolute,
            recheck_paths=args.recheck,
            suspects_path=args.suspects,
            allow_unjudged=args.allow_unjudged,
        )
        print(text, end="")
        return code
    except ResultsError as exc:
        print(f"reports: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: never exit 1, which a CI step reads as "regression"
        if os.environ.get("REPORTS_DEBUG"):
            raise
        print(
            f"reports: internal error ({type(exc).__name__}: {str(exc)[:200]}); rerun with REPORTS_DEBUG=1 "
            "for the traceback",
            file=sys.stderr,
        )
        return 4


if __name__ == "__main__":
    sys.exit(main())
