#!/usr/bin/env python3
"""The answer of a GPU slot in at most 40 lines, for the end of `.ci/gpu-reference`'s output (a device
call returns the last 12,000 characters of it even when its files are lost).

    python3 .ci/gpu_slot_summary.py OUTDIR

From OUTDIR's headline.json.gz (else quick.json.gz): each timed pair the case's rule names, its
median speed-up with the 95% interval, the speed-up between the sides' CUDA-graph replays (the
GPU's time alone) and the host-bound flag (reports.summary); then the timer probe's speed-ups
(probe.json: warm, graph, do_bench), beside the do_bench figures an H200 gave before. A file
that is missing or unreadable is one line saying so. Reads results files only (reports.load):
no torch.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reports import load, summary  # noqa: E402

MAX_PAIRS = 24
# do_bench on an H200 (torch 2.11+cu130), the independent probe the gpu review compared against.
EARLIER = (
    "earlier do_bench (H200): distance 32.0x (n1024) / 72.2x (n4096), TF32 matmul 7.24x, TF32 conv 9.04x"
)


def _x(value: float) -> str:
    return f"{value:.3g}x" if isinstance(value, float) and math.isfinite(value) else "-"


def pairs_table(path: Path) -> list[str]:
    try:
        results = load.load([path])
    except (load.ResultsError, OSError) as exc:
        return [f"{path.name}: not read ({str(exc).splitlines()[0][:150]})"]
    table = summary.build(results.rows, results.cases, results.pairs)
    rows = table[
        (table["against"] == "rule") & (table["timing_mode"] == "warm") & table["paired"].astype(bool)
    ]
    lines = [f"{path.name}: {len(rows)} rule pairs timed side by side (speed-up [95% CI]; GPU only)"]
    for r in rows.head(MAX_PAIRS).itertuples():
        ci = f"[{r.ci_low:.3g}, {r.ci_high:.3g}]" if math.isfinite(r.ci_low) else "[no CI]"
        flag = "  HOST-BOUND" if r.host_bound else ""
        lines.append(
            f"  {r.case} {r.fast}/{r.slow} {r.size_label} {r.dtype}: {_x(r.speedup)} {ci}; "
            f"graph {_x(r.graph_speedup)}{flag}"
        )
    if len(rows) > MAX_PAIRS:
        lines.append(f"  ... {len(rows) - MAX_PAIRS} more in {path.name}")
    return lines


def probe_lines(path: Path) -> list[str]:
    try:
        rows = {r["workload"]: r for r in json.loads(path.read_text())["rows"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{path.name}: not read ({exc})"]
    out = [f"{path.name}: speed-up warm / graph / do_bench"]
    for label, slow, fast in (
        ("distance n1024", "distance.broadcast n1024", "distance.matmul n1024"),
        ("distance n4096", "distance.broadcast n4096", "distance.matmul n4096"),
        ("gemm 4096 ieee/tf32", "gemm 4096 ieee", "gemm 4096 tf32"),
    ):
        s, f = rows.get(slow), rows.get(fast)
        if s and f:
            cells = [
                _x(s[k] / f[k]) if s.get(k) and f.get(k) else "-" for k in ("warm_s", "graph_s", "do_bench_s")
            ]
            out.append(f"  {label}: {' / '.join(cells)}")
    gaps = [r["gap_s"] for r in rows.values() if r.get("gap_s") is not None]
    if gaps:
        out.append(f"  in-window gap (k-call fit): {min(gaps) * 1e6:.1f}-{max(gaps) * 1e6:.1f} us")
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: gpu_slot_summary.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(args[0])
    results = next(
        (out / name for name in ("headline.json.gz", "quick.json.gz") if (out / name).exists()), None
    )
    lines = pairs_table(results) if results else ["no headline.json.gz or quick.json.gz: no pair to show"]
    lines += probe_lines(out / "probe.json") if (out / "probe.json").exists() else ["no probe.json"]
    lines.append(EARLIER)
    print("\n".join(lines[:40]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
