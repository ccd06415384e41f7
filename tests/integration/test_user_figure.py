"""The suite's figures are the ones a user's program sees, in both allocator states the report
names, at every quick point of `distance.pairwise` and `layernorm.manual` (issue 39).

Ours: the suite run on the case (`pytest suite -k CASE`, the quick profile, no compiled twins), its
results JSON read: each variant's median (a side of a timed pair: its side of the pair's rounds),
timed in the settled heap the suite pins, and its `faulted_pages` figure (a forkserver's child,
blocked_autorange). Theirs: `tests.fresh_timer`, a fresh interpreter timing with
torch.utils.benchmark's adaptive_autorange, in an environment that sets the state:
- settled: glibc's thresholds as the suite pins them (`allocator.TUNABLES`); one interpreter a
  case, its points in the suite's order: in that state a point's figure does not depend on what
  ran before it (the heap is never trimmed; tests/integration/test_allocator.py);
- faulted: glibc's initial 128 KiB mmap threshold held (`allocator.FAULTED_TUNABLES`); one
  interpreter a point, since there a block near the threshold can come from what an earlier
  point freed (matmul at n = 128 took 0.076 ms after the broadcast and 0.22-0.24 ms alone, measured);
- default: glibc's defaults, one interpreter a point, as a user's short program.

Held: ours within 10% of theirs in the settled and the faulted states, and the default program's
figure within the two states' figures (theirs, so one timer judges all three), widened by 10% on
each side. Timing noise on a quiet machine is a few percent a figure; the states differ by 1.5-6×
at the points where the allocator matters (broadcast at n = 128: 1.4 against 8.6-10 ms). The two
sides are timed minutes apart, and a page fault's cost on this VM drifts over minutes (the
broadcast at n = 256, whose 64 MiB temporaries are mapped fresh in every state: 26 ms in one run,
39-41 ms in another), so points that miss are timed again, both sides, up to `ATTEMPTS` times in
all; every attempt's figures are in the failure message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.host import allocator
from plan import expand
from tests import quiet
from tests.launcher import PYTEST, ROOT

# Not yet true, so out of CI (slow) and expected to fail (not strict: a quiet hour may pass it). On
# the 2-core Xeon (AMX), 2026-11-27, three attempts each: distance.pairwise held 19-23 of 24 points
# and layernorm.manual 2 of 6. What misses: (1) the faulted figure, a forkserver's child, is 12-19%
# under a fresh interpreter's where pages are faulted (cdist_direct at n = 1024: 53 against 61 ms;
# the library LayerNorm at d = 2048: 4.0 against 4.9 ms), and one fresh interpreter differs from
# the next by up to 15% there; (2) near the 128 KiB threshold the faulted state depends on what
# the process freed before (matmul at n = 128: 0.22 ms in the child, 0.078 ms in the interpreter);
# (3) a settled figure in the suite's long-lived process is not a fresh interpreter's: the library
# LayerNorm at d = 2048 0.91-1.26 ms in the suite (0.82-0.86 in a process that ran only its pair,
# which agrees within 8% with adaptive_autorange timed in that same process) against 0.69-0.73 ms
# in fresh interpreters. Against the median of five fresh interpreters a point, the median of three
# quick runs' figures held at 16 of 30 points settled and 26 of 30 faulted; the five themselves
# spread by 5-15% at most points and up to 49% (settled) or 179% (faulted, near 128 KiB).
pytestmark = [
    pytest.mark.integration,
    pytest.mark.timing,
    pytest.mark.slow,
    pytest.mark.xfail(reason="issue 39: the suite's figures are not yet within 10% of a fresh program's"),
]

CASES = ("distance.pairwise", "layernorm.manual")
BOUND = 0.10
ATTEMPTS = 3
STATES = {
    "settled": allocator.TUNABLES,
    "faulted": allocator.FAULTED_TUNABLES,
    "default": "",
}


def quick_points(case_id: str) -> list[tuple[str, str]]:
    """(variant, size label) of every eager quick CPU point of the case, in the suite's order."""
    return [
        (p.variant_name, p.size_label)
        for p in expand.variant_points("quick", ["cpu"], compile_scope="none")
        if p.case.id == case_id
    ]


def ours(case_id: str, points, tmp_path) -> dict:
    """{(variant, size label): (settled median, faulted median)} from a suite run of `points`."""
    sizes = sorted({size for _, size in points})
    out = tmp_path / f"ours-{len(list(tmp_path.iterdir()))}.json"
    selected = f"{case_id} and ({' or '.join(sizes)})"
    run = subprocess.run(
        [*PYTEST, "suite", "-q", "-k", selected, "--compiled", "none", "--no-history", "--results", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    figures = {}
    for bench in json.loads(out.read_text())["benchmarks"]:
        info = bench["extra_info"]
        key = (info["variant"], info["size_label"])
        if info.get("case") == case_id and key in points:
            faulted = info.get("faulted_pages") or {}
            assert "median_s" in faulted, f"{key}: no faulted-pages figure: {faulted}"
            figures[key] = (bench["stats"]["median"], faulted["median_s"])
    assert set(figures) == set(points), f"the suite timed {sorted(figures)}, not {sorted(points)}"
    return figures


def theirs(state: str, case_id: str, points) -> dict:
    """{(variant, size label): median} from fresh interpreters in `state`: one for all `points`
    in the settled state, one a point otherwise."""
    env = dict(os.environ, GLIBC_TUNABLES=allocator.environment_with(STATES[state]).strip(":"))
    batches = [list(points)] if state == "settled" else [[p] for p in points]
    figures = {}
    for batch in batches:
        args = [x for point in batch for x in point]
        run = subprocess.run(
            [sys.executable, "-m", "tests.fresh_timer", case_id, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        for line in run.stdout.splitlines():
            row = json.loads(line)
            figures[(row["variant"], row["size_label"])] = row["median_s"]
    return figures


def misses(point, our, their) -> list[str]:
    """What `point` breaks, in words ([] where it holds)."""
    (settled, faulted), found = our[point], []
    for state, mine in (("settled", settled), ("faulted", faulted)):
        if abs(mine / their[state][point] - 1) > BOUND:
            found.append(f"{state}: ours {mine * 1e3:.4g} ms, theirs {their[state][point] * 1e3:.4g} ms")
    low = min(their["settled"][point], their["faulted"][point]) * (1 - BOUND)
    high = max(their["settled"][point], their["faulted"][point]) * (1 + BOUND)
    if not low <= their["default"][point] <= high:
        found.append(
            f"default {their['default'][point] * 1e3:.4g} ms outside [{low * 1e3:.4g}, {high * 1e3:.4g}] ms"
        )
    return found


@pytest.mark.parametrize("case_id", CASES)
def test_the_suite_times_what_a_fresh_program_sees_in_both_states(case_id, tmp_path, record_property):
    if allocator.pin().get("pinned") is not True:
        pytest.skip("the allocator states are glibc's")
    left, log = quick_points(case_id), []
    for attempt in range(1, ATTEMPTS + 1):
        our = ours(case_id, left, tmp_path)
        their = {state: theirs(state, case_id, left) for state in STATES}
        failed = {point: found for point in left if (found := misses(point, our, their))}
        log.append(
            f"attempt {attempt}: {len(left) - len(failed)} of {len(left)} points hold"
            + "".join(f"\n  {v} {s}: " + "; ".join(found) for (v, s), found in failed.items())
        )
        if not failed:
            break
        left = list(failed)
    record_property("agreement", log)
    print("\n".join(log))
    quiet.hold(not failed, f"{case_id}: the suite and a fresh program disagree:\n" + "\n".join(log))
