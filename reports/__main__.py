"""``python -m reports build RESULTS... [--out DIR]``, ``python -m reports gate --baseline B --current C``
(or ``--history H``), ``python -m reports merge SHARDS... --out merged.json`` and
``python -m reports history add|changes|runs``.

Exit status: 0 success (gate: no regression); 1 the gate found a regression or a failed check,
and nothing else; 2 bad input, with a one-line message naming the file on stderr; 3 the gate could
not judge a pair (unstable in the run and every recheck; ``--allow-unjudged`` passes it); 4 an
internal error of the reports (a bug: the message says how to see the traceback). merge: 0 merged and
complete; 2 bad input; 3 the shards do not make one run (each problem named: reports/merge.py).
"""

from __future__ import annotations

import argparse
import functools
import os
import sqlite3
import sys
import time
from pathlib import Path

from reports.load import ResultsError

DEFAULT_OUT = Path("reports") / "out"  # under the current directory, never inside the installed package


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line, built once per process: argparse asks the terminal's size and the
    locale's translations for every argument it adds (3 of the 4 ms of a refused file's run),
    and the tests call `main` some two thousand times. Parsing leaves the parser as it was."""
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
    build.add_argument(
        "--history",
        metavar="PATH",
        help="add a History section per ID from this history (default: a history.sqlite beside the results)",
    )
    gate = sub.add_parser("gate", help="fail (exit 1) on a significant drop of within-run speedups")
    where = gate.add_mutually_exclusive_group(required=True)
    where.add_argument("--baseline", help="results JSON (or a folder of runs) of the stored baseline")
    where.add_argument(
        "--history",
        metavar="PATH",
        help="draw the baseline from this history: the last --last runs of the current run's machine key "
        "on --baseline-branch",
    )
    gate.add_argument("--last", type=int, default=5, help="with --history: how many runs (default 5)")
    gate.add_argument(
        "--baseline-branch",
        default="main",
        help="with --history: the branch whose runs are the baseline (default main; '*' any)",
    )
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
    merge = sub.add_parser("merge", help="the shards of a run (pytest suite --shard K/N) into one run")
    merge.add_argument("results", nargs="+", help="the shards' results files (.json, .json.gz, folders)")
    merge.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the merged results file; with shards of several groups, a folder of <group>.json",
    )
    merge.add_argument(
        "--manifest",
        help="the manifest written before the fan-out (python -m suite.manifest): every planned point "
        "in exactly one shard, checked both ways",
    )
    history = sub.add_parser("history", help="the history of runs: add results files, find change points")
    hsub = history.add_subparsers(dest="history_command", required=True)
    add = hsub.add_parser("add", help="append results files (.json, .json.gz, folders); a run is kept once")
    add.add_argument("results", nargs="+")
    changes = hsub.add_parser("changes", help="change points of every speed-up and verdict series")
    changes.add_argument("--since", help="only changes from this date (ISO) or commit on")
    changes.add_argument(
        "--by",
        choices=("machine", "torch"),
        default="machine",
        help="series per machine key (default), or per hardware across torch versions (names upgrades)",
    )
    listing = hsub.add_parser("runs", help="list the runs in the history")
    for p in (add, changes, listing):
        p.add_argument(
            "--history",
            default=str(Path("results") / "history.sqlite"),
            help="the history file (default results/history.sqlite)",
        )
    return parser


def _history(args) -> int:
    from reports.history import changes, ingest, store

    if args.history_command == "add":
        added = ingest.add_files(args.history, args.results)
        for a in added:
            print(f"{a.path}: {'added as run' if a.new else 'already in the history as run'} {a.run_id}")
        return 0
    if args.history_command == "changes":
        print(changes.markdown(changes.changes(args.history, args.by, args.since), args.by), end="")
        return 0
    with store.connect(args.history, create=False) as db:
        table = store.runs(db)
    cols = ["id", "time", "commit_id", "branch", "dirty", "machine", "profile", "source"]
    print(table[cols].to_string(index=False) if not table.empty else "no runs")
    return 0


def _refuse_shards(paths) -> None:
    """A shard (pytest suite --shard K/N) holds a slice of a run: gated alone, every point of the
    other shards would pass unseen. Merge first (python -m reports merge)."""
    from reports.load import collect_paths, read_json

    for path in collect_paths(paths):
        if isinstance((read_json(path).get("suite") or {}).get("shard"), dict):
            raise ResultsError(
                f"{path}: a shard of a run, not a run: merge the shards first "
                "(python -m reports merge SHARDS... --out merged.json)"
            )


def _merge(args) -> int:
    import json

    from reports import merge
    from reports.load import collect_paths

    manifest = merge.read_manifest(args.manifest) if args.manifest else None
    paths = collect_paths(args.results)
    try:
        merged, notes = merge.merge(paths, manifest)
    except merge.MergeError as exc:
        for problem in exc.problems:
            print(f"reports merge: {problem}", file=sys.stderr)
        print(f"reports merge: refused ({len(exc.problems)} problem(s)); nothing written", file=sys.stderr)
        return 3
    for note in notes:
        print(f"reports merge: {note}")
    for group, path in merge.out_paths(args.out, merged).items():
        doc = merged[group]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        tmp.replace(path)
        info = doc["suite"]["merged"]
        print(
            f"reports merge: {len(info['shards'])} shards of {info['n']} (manifest {info['manifest']}"
            + (f", group {group}" if group else "")
            + f"): {len(doc['benchmarks'])} benchmarks, {len(doc['outcomes'])} outcomes → {path}"
        )
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            from reports.build import build

            start = time.perf_counter()
            index = build(args.results, args.out)
            from reports.history import report

            found = report.add_to_report(index, args.results, args.history)
            print(
                f"report built in {time.perf_counter() - start:.1f} s: {index}"
                + (f" (history: {found})" if found else "")
            )
            return 0
        if args.command == "history":
            return _history(args)
        if args.command == "merge":
            return _merge(args)
        from reports.gate.cli import run

        _refuse_shards([args.current, *args.recheck])
        code, text = run(
            args.baseline,
            args.current,
            history=args.history,
            last=args.last,
            branch=args.baseline_branch,
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
    except sqlite3.Error as exc:  # a history that cannot be read or written: the machine's state, not a bug
        from reports.history import store

        print(f"reports: history: {store.describe_error(exc)}", file=sys.stderr)
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
