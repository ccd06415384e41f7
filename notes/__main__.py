"""The counts, and the child's entry point:

python -m notes                          # the counts: by class, run, errata by kind and ID
python -m notes --run 003 --out FILE     # the child: one note's results as JSON
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from notes.classify import errata_of
from notes.parse import CLASSES, all_snippets
from notes.run import child, run_notes


def summary() -> str:
    snippets = all_snippets()
    prefixes = sorted({s.prefix for s in snippets})
    by_note = run_notes(prefixes)
    results = [r for p in prefixes for r in by_note[p]]
    code = [r for r in results if r["class"] == "code"]
    errata = [(r, e) for r in results for e in errata_of(r)]
    kinds = collections.Counter(e.kind.value for _, e in errata)
    classes = collections.Counter(r["class"] for r in results)
    lines = [
        f"snippets found: {len(results)} in {len(prefixes)} notes",
        "by class: " + ", ".join(f"{c}: {classes[c]}" for c in CLASSES),
        f"code compiled: {sum(not r.get('compile_error') for r in code)}",
        f"code compile failures: {sum(bool(r.get('compile_error')) for r in code)}",
        f"code run: {sum(r['ran'] for r in code)}",
        f"code raising: {sum(bool(r.get('error')) and not r['error'].get('elsewhere') for r in code)}",
        f"code with deprecations: {sum(bool(r.get('deprecations')) for r in code)}",
        f"transcripts replayed (context only): "
        f"{sum(r['ran'] for r in results if r['class'] == 'transcript')}",
        f"errata: {len(errata)} on {len({r['locator'] for r, _ in errata})} snippets",
        "errata by kind: " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())),
        "",
        "per ID (snippets by class; code compiled, ran; errata):",
    ]
    by_id = collections.defaultdict(list)
    for r in results:
        by_id[r["id"] or "?"].append(r)
    for case_id in sorted(by_id):
        rs = by_id[case_id]
        cs = collections.Counter(r["class"] for r in rs)
        py = [r for r in rs if r["class"] == "code"]
        lines.append(
            f"  {case_id}: {len(rs)} snippets ({', '.join(f'{c} {cs[c]}' for c in CLASSES if cs[c])}); "
            f"{sum(not r.get('compile_error') for r in py)} compiled, {sum(r['ran'] for r in py)} ran, "
            f"{sum(len(errata_of(r)) for r in rs)} errata"
        )
    lines += ["", "errata:"]
    for r, e in errata:
        lines.append(f"  {r['id']} {r['locator']} {e.where} [{e.kind.value}] {e.quote[:70]!r}")
        lines.append(f"      {e.evidence[:200]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", metavar="PREFIX", help="the child: run one note, write its results")
    parser.add_argument("--out", help="where the child writes its results (JSON)")
    args = parser.parse_args(argv)
    if args.run:
        out = Path(args.out).resolve()
        with tempfile.TemporaryDirectory(prefix=f"notes-{args.run}-") as cwd:
            os.chdir(cwd)  # the files the snippets write (xxx.pth, runs/) land here and go with it
            results = child(args.run)
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
        return 0
    print(summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
