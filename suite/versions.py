"""Run one selection under several torch versions on this machine and compare them, claim by claim:

    python -m suite.versions 2.13.0 2.14.1 --alternations 6 -- -k "distance or layout"
    python -m suite.versions base=/path/to/python again=/path/to/python -- -k distance   (A/A)

A version is ``X.Y.Z`` (an environment is made for it under ``--envs``, once, and reused: ``uv venv``
and ``uv pip`` where uv is on PATH, else ``python -m venv`` and pip; the package installed editable
beside ``torch==X.Y.Z``) or ``LABEL=PYTHON``, an interpreter that already has torch and this package.
The runs alternate A, B, A, B, … (``--alternations`` rounds of one run per version), so a drift of
the machine over the session falls on every version alike; each run is ``pytest suite --results
OUT/LABEL/runI.json --no-history`` plus the arguments after ``--``. Then reports.versions compares
each later version with the first: ``versions-claims.csv`` (every claim's verdict per version, a
claim in one version only listed), ``versions-pairs.csv`` (each timed pair's ratio of speed-ups with
its 95% interval and ``changed``), ``versions-errata.csv`` (each erratum with the versions that found
it), ``versions-ids.csv``; a summary is printed.

Why by hand and not tox or nox: they make one environment per version well, but neither alternates
runs between environments, which is what keeps a drifting machine out of the comparison. The
environments themselves are uv's or venv's, the runs pytest's.

Exit status: 0 compared; 2 bad arguments, or an environment that could not be made (the installer's
output named); 3 a run wrote no results (its log named).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ENVS = Path.home() / ".cache" / "torch-technique-suite" / "envs"
VERSION = re.compile(r"^\d+\.\d+(\.\d+)?([a-z0-9.+]*)$")


class Refused(Exception):
    """A step that cannot go on, with the line that says why."""


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def make_env(version: str, envs: Path, install_args: list[str], log) -> Path:
    """The interpreter of an environment with torch==version and this package, made once: a
    marker holding the torch it imported says it is ready."""
    env = envs / f"torch-{version}"
    marker = env / ".suite-torch"
    if marker.is_file():
        return _python(env)
    env.parent.mkdir(parents=True, exist_ok=True)
    uv = shutil.which("uv")
    if uv:
        steps = [
            [uv, "venv", "--python", sys.executable, str(env)],
            [
                uv,
                "pip",
                "install",
                "--python",
                str(_python(env)),
                f"torch=={version}",
                "-e",
                str(ROOT),
                *install_args,
            ],
        ]
    else:
        steps = [
            [sys.executable, "-m", "venv", str(env)],
            [
                str(_python(env)),
                "-m",
                "pip",
                "install",
                "-q",
                f"torch=={version}",
                "-e",
                str(ROOT),
                *install_args,
            ],
        ]
    for step in steps:
        print(f"suite.versions: {' '.join(step)}", file=log, flush=True)
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise Refused(
                f"torch {version}: `{' '.join(step[:3])} …` exited {done.returncode}: " + " | ".join(tail)
            )
    probe = subprocess.run(
        [str(_python(env)), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
    )
    if probe.returncode:
        raise Refused(
            f"torch {version}: the new environment cannot import torch: {probe.stderr.strip()[-300:]}"
        )
    marker.write_text(probe.stdout.strip() + "\n")
    return _python(env)


def parse_targets(targets: list[str]) -> list[tuple[str, str | None]]:
    """(label, interpreter or None for a version to make) of each argument, in order."""
    out = []
    for target in targets:
        label, eq, python = target.partition("=")
        if eq:
            if not label or not Path(python).is_file():
                raise Refused(f"{target!r}: LABEL=PYTHON needs a label and an existing interpreter")
            out.append((label, python))
        elif VERSION.match(target):
            out.append((target, None))
        else:
            raise Refused(f"{target!r} is neither a torch version (2.13.0) nor LABEL=PYTHON")
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        raise Refused(f"each version or label once: {labels}")
    if len(out) < 2:
        raise Refused("give two versions or more")
    return out


def schedule(labels: list[str], alternations: int) -> list[tuple[int, str]]:
    """(run index, label) in the order run: A, B, …, A, B, …"""
    return [(i, label) for i in range(alternations) for label in labels]


def run_all(interpreters: dict[str, str], alternations: int, out: Path, pytest_args: list[str], log) -> None:
    order = schedule(list(interpreters), alternations)
    start = time.monotonic()
    for n, (i, label) in enumerate(order, 1):
        folder = out / label
        folder.mkdir(parents=True, exist_ok=True)
        results, run_log = folder / f"run{i}.json", folder / f"run{i}.log"
        cmd = [interpreters[label], "-m", "pytest", "suite", "-q", "-p", "no:cacheprovider"]
        cmd += ["--results", str(results), "--no-history", *pytest_args]
        with open(run_log, "w") as sink:
            code = subprocess.run(cmd, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT).returncode
        elapsed = time.monotonic() - start
        eta = elapsed / n * (len(order) - n)
        print(
            f"suite.versions: run {n}/{len(order)} ({label}, alternation {i + 1}): pytest exit {code}; "
            f"elapsed {elapsed / 60:.1f} min, ETA {eta / 60:.1f} min",
            file=log,
            flush=True,
        )
        # A failed check (1) still wrote its results, and is what a version may change; no results
        # at all is a run that did not happen.
        if not results.is_file():
            raise Refused(f"{label} run {i}: no results written (pytest exit {code}); see {run_log}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, pytest_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    parser = argparse.ArgumentParser(prog="python -m suite.versions", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+", metavar="VERSION|LABEL=PYTHON")
    parser.add_argument(
        "--alternations", type=int, default=6, help="runs per version, alternated (default 6)"
    )
    parser.add_argument(
        "--envs", type=Path, default=DEFAULT_ENVS, help=f"where environments are kept ({DEFAULT_ENVS})"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("results") / "versions", help="default results/versions"
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=None,
        help="the band a speed change must clear (default: the catalogue's)",
    )
    parser.add_argument(
        "--install-arg", action="append", default=[], help="passed to the installer (e.g. an index URL)"
    )
    parser.add_argument("--compare-only", action="store_true", help="compare the runs already in --out")
    args = parser.parse_args(ours)
    if args.alternations < 2:
        parser.error("--alternations must be at least 2: one run a version says nothing of its noise")
    try:
        targets = parse_targets(args.targets)
        if not args.compare_only:
            interpreters = {
                label: python or str(make_env(label, args.envs, args.install_arg, sys.stdout))
                for label, python in targets
            }
            run_all(interpreters, args.alternations, args.out, pytest_args, sys.stdout)
        return compare_and_write([label for label, _ in targets], args.out, args.delta)
    except Refused as why:
        print(f"suite.versions: {why}", file=sys.stderr)
        return 3 if "no results" in str(why) else 2


def compare_and_write(labels: list[str], out: Path, delta: float | None) -> int:
    # The reports are imported here: making environments and running needs none of them.
    from reports import load, versions

    results = {}
    for label in labels:
        paths = sorted((out / label).glob("run*.json"))
        if not paths:
            raise Refused(f"{label}: no runs in {out / label}")
        results[label] = load.load(paths)
    comparison = versions.compare(results, delta)
    comparison.claims.to_csv(out / "versions-claims.csv", index=False)
    comparison.pairs.to_csv(out / "versions-pairs.csv", index=False)
    comparison.errata.to_csv(out / "versions-errata.csv", index=False)
    comparison.ids.to_csv(out / "versions-ids.csv", index=False)
    changed = comparison.ids[comparison.ids["changed"]]
    print(
        f"suite.versions: {len(changed)} of {len(comparison.ids)} IDs changed between {' and '.join(labels)}"
    )
    for row in changed.to_dict("records"):
        print(f"  {row['case']}: {row['why']}")
    print(f"suite.versions: tables in {out}/versions-*.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
