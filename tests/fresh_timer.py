"""A user's program, as the timing tests compare the suite with it: a fresh interpreter that makes
a point's inputs and times its variant with torch.utils.benchmark's ``adaptive_autorange`` (the
field's timer, its own stopping rule), in whatever allocator state its environment sets.

    python -m tests.fresh_timer CASE VARIANT SIZE_LABEL [VARIANT SIZE_LABEL ...]

prints one JSON line a point: {"variant", "size_label", "median_s", "iqr_s", "blocks"}. The points
are the case's quick CPU points, float32, seed 0, as the suite makes them; timed in the order given,
with torch's default threads."""

from __future__ import annotations

import json
import sys

import torch
from torch.utils import benchmark

from harness.measure import block_context
from plan import expand

MIN_RUN_S = 0.2
MAX_RUN_S = 1.0  # of timed calls; a call of 0.56 s (the broadcast at n = 1024) is timed twice


def main(case_id: str, wanted: list[tuple[str, str]]) -> None:
    points = {
        (p.variant_name, p.size_label): p
        for p in expand.variant_points("quick", ["cpu"], compile_scope="none")
        if p.case.id == case_id
    }
    for variant, size_label in wanted:
        point = points[(variant, size_label)]
        call, context = block_context.entered(point.variant.fn, point.make_inputs(0))
        with context():
            threads = torch.get_num_threads()
            timer = benchmark.Timer(stmt="call()", globals={"call": call}, num_threads=threads)
            measured = timer.adaptive_autorange(min_run_time=MIN_RUN_S, max_run_time=MAX_RUN_S)
        del call
        line = {"variant": variant, "size_label": size_label, "median_s": measured.median}
        print(json.dumps(line | {"iqr_s": measured.iqr, "blocks": len(measured.times)}), flush=True)


if __name__ == "__main__":
    args = sys.argv[2:]
    main(sys.argv[1], list(zip(args[::2], args[1::2])))
