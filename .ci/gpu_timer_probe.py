#!/usr/bin/env python3
"""The timer question, answered without pytest and without the load gate: one table of what each
of the suite's clocks reads for a few workloads on this GPU.

    python3 .ci/gpu_timer_probe.py [--json OUT] [--budget SECONDS]   on a CUDA machine
    python3 .ci/gpu_timer_probe.py --fake [--json OUT]               on the CPU (CI): FakeDevice

Workloads: an add over 256 MiB operands (HBM-bound) and over 8 MiB (L2-resident, host-bound), an
fp32 GEMM at 4096 in IEEE and in TF32, and the suite's own distance variants
(`cases.distance.matmul` and `broadcast`, fp32, d = 256) at n = 1024 and 4096. For each:

- warm: the suite's warm median (harness.measure.timing.rounds_by_hand: rounds of ≥ 2 ms of device
  time on the device's clock, sized from several calls);
- gap, fit: the k-call fit t(k) = a + b·k over rounds of 1-32 calls (harness.contract.rounds.fit_calls):
  a is the launch gap every window holds, b the call; warm/fit - 1 is what the gap still adds;
- graph: a CUDA-graph replay of several calls ÷ the calls (harness.measure.graph_figure), the
  GPU's time alone; warm/graph over 1.3 says the warm rounds ran at the host's pace;
- do_bench: ``triton.testing.do_bench`` (25 ms warm-up, 100 ms of repeats, median), where triton is;
- cold: the suite's cold-L2 rounds (a flush of twice the L2 before each call, outside the window).

Then the speed-ups the suite's claims rest on: broadcast ÷ matmul at both sizes and IEEE ÷ TF32,
under each clock. ``--fake`` runs the same code on `tests.fake_device.FakeDevice` with a 20 µs
launch latency and modelled kernels (an H100's, from tests/data/h100_timing_modes.log and the
gpu review), so CI runs every path in a second; its figures are the model's, not a GPU's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from harness.contract import rounds  # noqa: E402
from harness.measure import device as harness_device  # noqa: E402
from harness.measure import graph_figure, precision_flags, timing  # noqa: E402
from tests.fake_device import FakeDevice  # noqa: E402

CUDA_ROUND_S = rounds.MIN_ROUND_S["cuda"]
FAKE_LATENCY_S = 20e-6
# Modelled on an H100 (fp32): (launches, device seconds each, host issue seconds each). The add
# moves 3 × its operand size at ~3 TB/s; the GEMM is 137 GFLOP at ~60 (IEEE) and ~450 (TF32)
# TFLOP/s; the distance matmul is 6 launches whose host issue (~75 µs) exceeds their GPU work.
FAKE_MODEL = {
    "add 256 MiB": (1, 270e-6, 8e-6),
    "add 8 MiB": (1, 5e-6, 8e-6),
    "gemm 4096 ieee": (1, 2.3e-3, 10e-6),
    "gemm 4096 tf32": (1, 0.32e-3, 10e-6),
    "distance.matmul n1024": (6, 6e-6, 12.5e-6),
    "distance.broadcast n1024": (1, 1.69e-3, 12.5e-6),
    "distance.matmul n4096": (6, 50e-6, 12.5e-6),
    "distance.broadcast n4096": (1, 27e-3, 12.5e-6),
}
RATIOS = (
    ("distance n1024: broadcast ÷ matmul", "distance.broadcast n1024", "distance.matmul n1024"),
    ("distance n4096: broadcast ÷ matmul", "distance.broadcast n4096", "distance.matmul n4096"),
    ("gemm 4096: ieee ÷ tf32", "gemm 4096 ieee", "gemm 4096 tf32"),
)


@dataclass
class Row:
    workload: str
    warm_s: float
    gap_s: float | None
    fit_s: float | None
    graph_s: float | None
    graph_note: str
    do_bench_s: float | None
    cold_s: float | None


def workloads(device: torch.device):
    """name → (call, the context it runs in): each call's inputs made once, outside every clock."""
    from cases import distance

    def add(mib: int):
        a, b = (torch.randn(mib * 2**18, device=device) for _ in range(2))
        out = torch.empty_like(a)
        return lambda: torch.add(a, b, out=out)

    def gemm():
        a, b = (torch.randn(4096, 4096, device=device) for _ in range(2))
        out = torch.empty_like(a)
        return lambda: torch.mm(a, b, out=out)

    def dist(fn, n: int):
        x, y = distance.make_points({"n": n, "m": n, "d": 256}, torch.float32, device, 0)
        return lambda: fn(x, y)

    ieee = lambda: precision_flags.matmul_precision("highest")  # noqa: E731
    yield "add 256 MiB", add(256), contextlib.nullcontext
    yield "add 8 MiB", add(8), contextlib.nullcontext
    yield "gemm 4096 ieee", gemm(), ieee
    yield "gemm 4096 tf32", gemm(), lambda: precision_flags.matmul_precision("high")
    for n in (1024, 4096):
        yield f"distance.matmul n{n}", dist(distance.matmul, n), ieee
        yield f"distance.broadcast n{n}", dist(distance.broadcast, n), ieee


def fake_workloads(fake: FakeDevice):
    for name, (launches, kernel_s, host_s) in FAKE_MODEL.items():

        def call(launches=launches, kernel_s=kernel_s, host_s=host_s):
            for _ in range(launches):
                fake.launch(kernel_s, host_s=host_s)

        yield name, call, contextlib.nullcontext


def cold_median(call, device: str, budget_s: float) -> float:
    """The suite's cold-L2 rounds as pytest-benchmark's pedantic runs them (timing.timed_rounds'
    ``cold_l2``): the flush as each round's setup, then a reading, one call, a reading."""
    flush = timing.L2Flush(device, wait=False)
    clock = harness_device.of(device).clock()
    flush()
    estimate = timing.clock_median(call, clock, reps=3, budget_s=0.5)
    samples = []
    for _ in range(rounds.fixed_time_rounds(estimate, budget_s, 5)):
        flush()
        t0 = clock()
        call()
        samples.append(clock() - t0)
    return statistics.median(samples)


def do_bench(call) -> float | None:
    try:
        from triton.testing import do_bench as bench
    except ImportError:
        return None
    return bench(call, warmup=25, rep=100, return_mode="median") / 1e3


def measure(name, call, context, *, device: str, budget_s: float, fake: bool) -> Row:
    with context():
        call()  # warm-up: allocation, kernel selection
        warm, info = timing.rounds_by_hand(call, device, cap_s=budget_s, min_rounds=10)
        warm_s = statistics.median(warm)
        graph = graph_figure.per_call(call, device, call_s=warm_s, min_round_s=CUDA_ROUND_S)
        bench = None if fake else do_bench(call)
        cold = cold_median(call, device, budget_s / 2)
    return Row(
        name,
        warm_s,
        info.get("gap_s"),
        info.get("fit_call_s"),
        graph.seconds,
        graph.reason,
        bench,
        cold,
    )


def _us(seconds: float | None) -> str:
    return "—" if seconds is None or not math.isfinite(seconds) else f"{seconds * 1e6:,.1f}"


def _ratio(a: float | None, b: float | None, fmt: str = "{:.2f}") -> str:
    return "—" if not a or not b else fmt.format(a / b)


def table(rows: list[Row]) -> str:
    head = (
        f"{'workload':26} {'warm µs':>10} {'gap µs':>8} {'fit µs':>10} {'warm/fit':>8} "
        f"{'graph µs':>10} {'warm/graph':>10} {'do_bench µs':>11} {'cold µs':>10}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.workload:26} {_us(r.warm_s):>10} {_us(r.gap_s):>8} {_us(r.fit_s):>10} "
            f"{f'{r.warm_s / r.fit_s - 1:+.1%}' if r.fit_s else '—':>8} "
            f"{_us(r.graph_s):>10} {_ratio(r.warm_s, r.graph_s):>10} {_us(r.do_bench_s):>11} "
            f"{_us(r.cold_s):>10}"
        )
    by = {r.workload: r for r in rows}
    lines.append("")
    lines.append(f"{'speed-up':40} {'warm':>8} {'graph':>8} {'do_bench':>9} {'cold':>8}")
    for label, slow, fast in RATIOS:
        s, f = by.get(slow), by.get(fast)
        if s is None or f is None:
            continue
        cells = [
            _ratio(getattr(s, k), getattr(f, k), "{:.2f}×")
            for k in ("warm_s", "graph_s", "do_bench_s", "cold_s")
        ]
        lines.append(f"{label:40} {cells[0]:>8} {cells[1]:>8} {cells[2]:>9} {cells[3]:>8}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fake", action="store_true", help="FakeDevice on the CPU (CI): the model's figures")
    parser.add_argument("--json", type=Path, help="write the rows here as they finish")
    parser.add_argument(
        "--budget",
        type=float,
        help="seconds of rounds per workload (default 1; 0.1 with --fake, whose calls cost no time)",
    )
    args = parser.parse_args(argv)
    budget = args.budget or (0.1 if args.fake else 1.0)
    if not args.fake and not torch.cuda.is_available():
        print(
            "gpu_timer_probe: CUDA is not available to this interpreter; --fake runs the CPU path",
            file=sys.stderr,
        )
        return 3
    started = time.monotonic()
    rows: list[Row] = []
    # The fake's flush is host memory its clock never sees: a small one keeps the cold rounds cheap.
    fake = FakeDevice(launch_latency=FAKE_LATENCY_S, l2=2**14) if args.fake else None
    with harness_device.installed(fake) if fake else contextlib.nullcontext():
        device = "cuda"
        machine = (
            "FakeDevice (20 µs launch latency; modelled kernels)" if fake else torch.cuda.get_device_name()
        )
        print(f"gpu_timer_probe on {machine}, torch {torch.__version__}", flush=True)
        source = fake_workloads(fake) if fake else workloads(torch.device(device))
        for name, call, context in source:
            try:
                rows.append(measure(name, call, context, device=device, budget_s=budget, fake=bool(fake)))
            except torch.OutOfMemoryError as exc:
                print(f"{name}: out of memory ({str(exc).splitlines()[0][:120]})", flush=True)
            del call
            if not fake:
                torch.cuda.empty_cache()
            if args.json:  # as each row finishes: a probe cut short still leaves what it measured
                doc = {"machine": machine, "torch": torch.__version__, "rows": [asdict(r) for r in rows]}
                if fake:
                    doc["model"] = {
                        k: dict(zip(("launches", "kernel_s", "host_s"), v)) for k, v in FAKE_MODEL.items()
                    }
                args.json.write_text(json.dumps(doc, indent=1))
    print(table(rows))
    print(f"({time.monotonic() - started:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
