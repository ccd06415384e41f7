"""Ring all-reduce against the master/naive one (notes 002 "allreduce", 004 "Ring all-reduce"):
bytes sent per rank, time against message size, and the α–β model that says how each scales.

In-process here: d2l's `allreduce` over replicas equals the float64 sum. Launched
(`cases._launch.dist_launches`, for `suite/test_distributed.py`): the four algorithms of
`cases._lib.collectives` over gloo ranks at each message size, read into one table
(`allreduce_table`), checked (`check_allreduce`) and turned into the cost model's row and finding
(`launched_cost_model`, `allreduce_cost_model`) and one row per algorithm (`launched_sweep`,
`allreduce_sweep_row`).
"""

from __future__ import annotations

import os
from statistics import median

import torch

from cases._launch.dist_launches import LaunchRecord, Runs
from cases._lib.collectives import bus_bandwidth, d2l_allreduce, fit_alpha_beta, model_time
from cases._lib.data_parallel import U32, replica_devices
from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict
from harness.contract import gain
from harness.contract.rules import FromFindings

ALLREDUCE_ROLES = {"naive": "naive", "master": "naive", "ring": "optimized", "all_reduce": "library"}


def check_d2l_allreduce(device):
    """The notes' d2l `allreduce` over k replicas equals the float64 sum, on every replica."""
    g = torch.Generator().manual_seed(3)
    devices = replica_devices(device, 4)
    data = [torch.randn(1000, generator=g).to(d) for d in devices]
    # Higham: a sum of 4 terms in any order is within γ₃·Σ|x| < 4u·Σ|x| of the truth, elementwise.
    bound = 4 * U32 * torch.stack([t.double().cpu().abs() for t in data]).sum(0)
    truth = torch.stack([t.double().cpu() for t in data]).sum(0)
    d2l_allreduce(data)
    excess = max(((t.double().cpu() - truth).abs() - bound).max().item() for t in data)
    error = max((t.double().cpu() - truth).abs().max().item() for t in data)
    replicas_equal = all(torch.equal(data[0].cpu(), t.cpu()) for t in data)
    return judge_d2l_allreduce(error, excess <= 0, replicas_equal, sorted({str(d) for d in devices}))


def judge_d2l_allreduce(
    error: float, within_bound: bool, replicas_equal: bool, devices: list[str]
) -> Finding:
    """The notes: `allreduce` sums the data of every device and copies the sum back to each.
    Holds where every replica is within p·u·Σ|x| of the float64 sum, elementwise, and all are equal."""
    return Finding(
        Verdict.HOLDS if within_bound and replicas_equal else Verdict.FAILS,
        f"4 replicas on {devices}: sum {'within' if within_bound else 'OUTSIDE'} p·u·Σ|x| of float64 "
        f"(max err {error:.2g}); replicas after the copy back {'all equal' if replicas_equal else 'DIFFER'}",
    )


# The launched cost model's outcome names (the finding's own at any world size, and the point's
# where the launch failed or was skipped: plan.launches' CPU sizes ≥ 2 of the default 1, 2, 4; every
# GPU count up to 8), all deciding one claim.
_COST_MODEL_NAMES = {
    **{f"cost_model-w{w}": "master_vs_ring_traffic" for w in range(2, 9)},
    **{f"test_allreduce-w{w}-cpu": "master_vs_ring_traffic" for w in (2, 4)},
    **{f"test_allreduce-w{w}-cuda": "master_vs_ring_traffic" for w in range(2, 9)},
}
# The timed sweep (plan.launches' test_allreduce_sizes: each algorithm at 2 CPU ranks): the ring's
# point judges the ring against the master at each message size; its finding's name at any world
# size, and the point's own where the launch failed or was skipped.
_SWEEP_NAMES = {
    **{f"ring_vs_master-w{w}": "ring_faster" for w in range(2, 9)},
    "test_allreduce_sizes-ring-w2-cpu": "ring_faster",
}
# The ring's per-rank traffic 2(p−1)/p·S equals the master's (p−1)·S at p = 2 and falls below it
# from p = 3 on: below this many ranks a ring no faster than the master is what the traffic predicts.
SCALING_P = 3
# Repetitions from which "every one beats every other" decides (see _gain_at): 3 against 3 is
# P = 1/20 under no difference, no stronger than a coin toss among twenty.
MIN_ALL_BEAT = 4

CASE = Case(
    id="parallel.allreduce",
    tier=2,
    claim="Ring all-reduce (reduce-scatter + all-gather) sends 2(p−1)/p·S per rank and scales; "
    "the master/naive version sends (p−1)·S through one link and does not.",
    source="002 allreduce, 004 Ring all-reduce",
    claims=(
        Claim(
            "allreduce_sums",
            "能够将所有设备上的梯度进行相加 … def allreduce(data): … "
            "data[0][:] += data[i].to(data[0].device) … data[i][:] = data[0].to(data[i].device)",
            "002",
            ClaimKind.CORRECTNESS,
            reading="the notes' allreduce(data), run as written, leaves every replica holding the "
            "sum of all of them",
        ),
        Claim(
            "master_vs_ring_traffic",
            "The master process is a performance bottleneck because its communication and reduction costs "
            "increase in proportion to the number of total"
            " processes. … Ring-all-reduce … 每个 GPU 只从左邻居接受"
            "数据、并发送数据给右邻居。",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="the master's (the naive gather-reduce-send-back, point to point) all-reduce "
            "time grows with the world size, faster than the ring's: timed at the largest message, "
            "from the 2-rank sweep to a larger one (the bytes each algorithm sends and its sum are "
            "the suite's implementations, asserted, deciding nothing)",
        ),
        Claim(
            "ring_faster",
            "Faster and more scalable algorithms have been proposed. … "
            "Such algorithms include Ring-AllReduce",
            "004",
            ClaimKind.SPEED,
            reading="ring all-reduce is faster than the master algorithm at the largest message "
            "timed, over 3 or more ranks (below 3 the two send the same bytes per rank: not measured)",
        ),
    ),
    checks={"d2l_allreduce": Check(check_d2l_allreduce, claim="allreduce_sums")},
    launched={**_COST_MODEL_NAMES, **_SWEEP_NAMES},
    requires=("distributed",),
    verdict=FromFindings(),
    uncompilable={
        name: "point-to-point sends between processes: the communication pattern is what is "
        "compared, not a tensor program torch.compile could fuse"
        for name in ("naive", "master")
    },
)


# ---- judging the launched runs -----------------------------------------------------------------------


def allreduce_table(ranks: list[dict]) -> tuple[list[dict], int]:
    """One row per (algorithm, message size): per repetition the slowest rank's time, and what
    each rank counted and checked."""
    p = ranks[0]["world_size"]
    table = []
    for i, row in enumerate(ranks[0]["rows"]):
        per_rank = [r["rows"][i] for r in ranks]
        times = [max(ts) for ts in zip(*(pr["times_s"] for pr in per_rank))]
        table.append(
            {
                **row,
                "p": p,
                "times_s": times,
                "median_s": median(times),
                "bytes_sent_per_rank": [pr["bytes_sent"] for pr in per_rank],
                "checked": [pr["within_bound"] for pr in per_rank],
                "errors": [pr["max_abs_err"] for pr in per_rank],
            }
        )
    return table, p


def allreduce_problems(table: list[dict], p: int) -> list[str]:
    """What is wrong in a sweep, as observations: a checked sum outside the fp32 bound p·u·Σ|x| (None:
    too big for the float64 truth), and bytes each rank counted other than the algorithms' traffic:
    the ring's 2(p−1)/p·S on every rank, the naive version's (p−1)·S through rank 0 and S from each
    other rank."""
    problems = []
    for row in table:
        if not all(c in (True, None) for c in row["checked"]):
            problems.append(
                f"{row['algorithm']} at {row['bytes']} B: sum outside the fp32 bound on some rank "
                f"({row['errors']})"
            )
        sent, s = row["bytes_sent_per_rank"], row["bytes"]
        if row["algorithm"] == "ring":  # exact for sizes divisible by p chunks of 4-byte elements
            ring = 2 * (p - 1) / p * s
            # Otherwise each of the 2(p−1) messages is off by ≤ one 4-byte element: ≤ 8(p−1) < 8p bytes.
            if not all(abs(b - ring) <= 8 * p for b in sent):
                problems.append(
                    f"ring at {s} B over {p} ranks: bytes sent {sent}, expected 2(p−1)/p·S = {ring:.0f}"
                )
        if row["algorithm"] == "naive" and not (sent[0] == (p - 1) * s and all(b == s for b in sent[1:])):
            problems.append(
                f"naive at {s} B over {p} ranks: bytes sent {sent}, expected (p−1)·S = {(p - 1) * s} "
                f"from rank 0 and S from each other rank"
            )
    return problems


def check_allreduce(table: list[dict], p: int) -> None:
    """`allreduce_problems` as assertions, and at least one size checked against the truth."""
    problems = allreduce_problems(table, p)
    assert not problems, problems[0]
    checked = any(all(c is True for c in row["checked"]) for row in table)
    assert checked, "no size was checked against the truth"


def growth(table: list[dict], base: list[dict], algorithm: str) -> tuple[int, float]:
    """(bytes, median time at `table`'s world / at `base`'s) for `algorithm` at the largest message
    both sweeps timed."""
    at = {r["bytes"]: r["median_s"] for r in table if r["algorithm"] == algorithm}
    was = {r["bytes"]: r["median_s"] for r in base if r["algorithm"] == algorithm}
    size = max(set(at) & set(was))
    return size, at[size] / was[size]


def oversubscribed(p: int, cores: int | None) -> str:
    """Why a timing over p CPU ranks is not the algorithms' (more ranks than cores: they take turns
    on a core, so the times say how the scheduler shared it), or "" where each rank has a core."""
    if cores is not None and p > cores:
        return f"{p} ranks on {cores} cores: the ranks take turns on a core, so the times measure the sharing"
    return ""


def judge_master_growth(
    naive: float | None,
    ring: float | None,
    p: int,
    base_p: int | None,
    size: int,
    band: float,
    fit: str,
    cores: int | None = None,
) -> Finding:
    """The notes: the master's communication and reduction costs grow in proportion to the number
    of processes; the ring's do not. `naive`, `ring`: each algorithm's median time at p over its
    median at base_p (two launches, the largest message both timed; None where only one world size
    was run). The master's traffic predicts (p−1)/(base_p−1), the ring's
    ((p−1)/p)/((base_p−1)/base_p). Holds where the master's time grows by more than the band and
    faster than the ring's by more than the band; fails where it does not grow, or grows slower
    than the ring's; grows, but within the band of the ring's growth: depends (no measurable
    difference at this size and these world sizes)."""
    if naive is None or ring is None or base_p is None or p <= base_p:
        return Finding(
            Verdict.NOT_MEASURED,
            f"one world size here (p={p}): how the master's cost grows with p needs a second "
            f"(the launch at a larger world reads this one). {fit}",
        )
    if why := oversubscribed(p, cores):
        return Finding(Verdict.NOT_MEASURED, f"not measured: {why}. {fit}")
    predicted = (p - 1) / (base_p - 1), ((p - 1) / p) / ((base_p - 1) / base_p)
    seen = (
        f"at {size:,} B from p={base_p} to p={p}: the master's (naive) time ×{naive:.2f} (its traffic "
        f"predicts ×{predicted[0]:.2g}), the ring's ×{ring:.2f} (predicts ×{predicted[1]:.2g}); band "
        f"±{band:.0%}, medians of two launches. {fit}"
    )
    if naive <= 1 + band or naive * (1 + band) < ring:
        return Finding(Verdict.FAILS, "the master's cost does not grow faster than the ring's: " + seen)
    if naive > (1 + band) * ring:
        return Finding(Verdict.HOLDS, "the master's cost grows with p, faster than the ring's: " + seen)
    return Finding(Verdict.DEPENDS, "the master's cost grows, within the band of the ring's: " + seen)


def allreduce_cost_model(
    table: list[dict],
    p: int,
    device: str,
    base: tuple[list[dict], int] | None = None,
    band: float = 0.05,
    cores: int | None = None,
) -> tuple[tuple[dict, dict, list[float]], Finding]:
    """The α–β model fitted to the naive, master and ring times, its error, its predictions at
    larger p, and the measured bus bandwidths; with `base` (a sweep at a smaller world), how the
    master's and the ring's times grew from it (`judge_master_growth`). The row's times are the
    library all-reduce's at the largest size (one row per algorithm and size would need one test
    each); every point is in its extra keys."""
    fitted = [r for r in table if r["algorithm"] in ("naive", "master", "ring")]
    alpha, beta = fit_alpha_beta([(r["algorithm"], p, r["bytes"], r["median_s"]) for r in fitted])
    points = []
    for r in table:
        algbw, busbw = bus_bandwidth(r["bytes"], r["median_s"], p)
        points.append(
            {
                "algorithm": r["algorithm"],
                "bytes": r["bytes"],
                "measured_s": r["median_s"],
                "model_s": model_time(r["algorithm"], p, r["bytes"], alpha, beta),
                "algbw": algbw,
                "busbw": busbw,
                "bytes_sent_rank0": r["bytes_sent_per_rank"][0],
            }
        )
    predictions = [
        {"algorithm": a, "p": q, "bytes": r["bytes"], "model_s": model_time(a, q, r["bytes"], alpha, beta)}
        for a in ("naive", "ring")
        for q in (2, 4, 8, 16, 64)
        for r in table
        if r["algorithm"] == a
    ]
    rel = [
        abs(pt["model_s"] - pt["measured_s"]) / pt["measured_s"]
        for pt in points
        if pt["algorithm"] != "all_reduce"
    ]
    big = max(r["bytes"] for r in table)
    at = {pt["algorithm"]: pt for pt in points if pt["bytes"] == big}
    ratio64 = model_time("naive", 64, big, alpha, beta) / model_time("ring", 64, big, alpha, beta)
    fit = (
        f"α–β fit at p={p}: α={alpha * 1e6:.1f} µs, "
        f"1/β={1 / beta / 1e9:.2f} GB/s (median |model−measured|/measured {median(rel):.0%}); "
        f"at {big >> 20} MiB measured busbw "
        + ", ".join(f"{a} {pt['busbw'] / 1e9:.2f} GB/s" for a, pt in at.items())
        + f"; the model predicts naive/ring = {ratio64:.0f}× at p=64 for {big >> 20} MiB"
    )
    if base is None:
        finding = judge_master_growth(None, None, p, None, big, band, fit)
    else:
        size, naive = growth(table, base[0], "naive")
        _, ring = growth(table, base[0], "ring")
        finding = judge_master_growth(naive, ring, p, base[1], size, band, fit, cores)
    info = {
        "case": "parallel.allreduce",
        "kind": "distributed",
        "variant": "cost_model",
        "role": "library",
        "device": device,
        "size": {"world_size": p},
        "size_label": f"w{p}",
        "x": "bytes",
        "dtype": "float32",
    }
    extra = {
        "alpha_s": alpha,
        "beta_s_per_byte": beta,
        "points": points,
        "predictions": predictions,
        "model": "ring: 2(p-1)·α + 2(p-1)/p·S·β; naive/master: 2(p-1)·α + 2(p-1)·S·β",
    }
    times = next(r for r in table if r["algorithm"] == "all_reduce" and r["bytes"] == big)["times_s"]
    return (info, extra, times), finding


def allreduce_sweep_row(
    table: list[dict], p: int, algorithm: str, device: str
) -> tuple[dict, dict, list[float]]:
    """One algorithm's row: its largest message's times and bus bandwidth, the whole size sweep in
    the extra keys (the reports plot bus bandwidth against size, one line per algorithm)."""
    rows = [r for r in table if r["algorithm"] == algorithm]
    for r in rows:
        assert all(c in (True, None) for c in r["checked"]), f"{algorithm} at {r['bytes']} B: wrong sum"
    largest = rows[-1]
    algbw, busbw = bus_bandwidth(largest["bytes"], largest["median_s"], p)
    info = {
        "case": "parallel.allreduce",
        "kind": "distributed",
        "variant": algorithm,
        "role": ALLREDUCE_ROLES[algorithm],
        "size": {"bytes": largest["bytes"], "world_size": p},
        "size_label": f"bytes{largest['bytes']}-w{p}",
        "x": "bytes",
        "dtype": "float32",
        "device": device,
    }
    extra = {
        "bytes_sent": largest["bytes_sent_per_rank"][0],
        "algbw": algbw,
        "busbw": busbw,
        "sweep": [
            {
                "bytes": r["bytes"],
                "median_s": r["median_s"],
                "times_s": r["times_s"],
                "busbw": bus_bandwidth(r["bytes"], r["median_s"], p)[1],
            }
            for r in rows
        ],
    }
    return info, extra, largest["times_s"]


def launched_table(run) -> tuple[list[dict], int]:
    """`allreduce_table` of a finished `allreduce` launch (a `harness.run.launch.Launch`)."""
    run.require_ok("allreduce")
    return allreduce_table(run.results("allreduce"))


def launched_cost_model(runs: Runs, device: str, world: int) -> LaunchRecord:
    """The cost model at `world` ranks; beyond 2, the growth of the master's and the ring's times
    from the 2-rank sweep (a shared launch) decides the traffic claim."""
    table, p = launched_table(runs.allreduce(device, world))
    # The algorithms' sums and sent bytes are the suite's own implementations, not the claim.
    check_allreduce(table, p)
    base = launched_table(runs.allreduce(device, 2)) if p > 2 else None
    cores = len(os.sched_getaffinity(0)) if device == "cpu" else None
    row, finding = allreduce_cost_model(table, p, device, base, gain.delta(), cores)
    return LaunchRecord(f"cost_model-w{p}", finding, f"parallel.allreduce model w{p} {device}", row)


def ring_vs_master(table: list[dict]) -> list[tuple[int, list[float], list[float]]]:
    """(bytes, the master's times, the ring's times) per message size of a sweep, smallest first."""
    by = {(r["algorithm"], r["bytes"]): r["times_s"] for r in table}
    sizes = sorted({b for a, b in by if a == "ring"} & {b for a, b in by if a == "master"})
    return [(s, list(by[("master", s)]), list(by[("ring", s)])) for s in sizes]


def _gain_at(master_s: list[float], ring_s: list[float], band: float) -> tuple[gain.Ratio, gain.Gain]:
    """master/ring: the paired ratio of the repetitions and what it shows against ±band. Below
    `gain.MIN_PAIRS` repetitions (the sweep's 3 to 5) there is no interval; from `MIN_ALL_BEAT`
    repetitions, every repetition of one side beating every repetition of the other by the band is
    the rank test's most extreme outcome (P = 1/C(2n, n) ≤ 1/70 under no difference, n ≥ 4), which
    decides; with fewer, nothing does."""
    n = min(len(master_s), len(ring_s))
    ratio = gain.paired_ratio(master_s[:n], ring_s[:n])
    seen = gain.classify(ratio, band)
    if seen is gain.Gain.UNCLEAR and ratio.n < gain.MIN_PAIRS and n >= MIN_ALL_BEAT:
        if min(master_s[:n]) > (1 + band) * max(ring_s[:n]):
            seen = gain.Gain.FASTER
        elif max(master_s[:n]) * (1 + band) < min(ring_s[:n]):
            seen = gain.Gain.SLOWER
    return ratio, seen


def judge_ring_faster_than_master(
    sweep: list[tuple[int, list[float], list[float]]], p: int, band: float, cores: int | None = None
) -> Finding:
    """The notes (004): Ring-AllReduce is "faster and more scalable" than the master algorithm.
    `sweep`: (bytes, master times, ring times) per message size, timed over `p` ranks. Decided at
    the largest message, where bandwidth, the ring's advantage, dominates, from `SCALING_P` ranks
    on: the ring faster by the band holds; slower or no measurable difference fails; too noisy to
    tell could not judge. Below `SCALING_P` (at p = 2 each rank of either sends S, so the traffic
    predicts no gain) not measured. Where it turns over the sizes is said."""
    if not sweep:
        return Finding(Verdict.NOT_MEASURED, f"p={p}: no message size timed both the ring and the master")
    seen_at = [(s, *_gain_at(m, r, band)) for s, m, r in sweep]
    size, ratio, seen = seen_at[-1]
    faster = [s for s, _, g in seen_at if g is gain.Gain.FASTER]
    where = (
        f"the ring is faster from {faster[0]:,} B on"
        if faster and all(g is gain.Gain.FASTER for s, _, g in seen_at if s >= faster[0])
        else (
            f"the ring is faster at {', '.join(f'{s:,}' for s in faster)} B"
            if faster
            else "the ring is faster at no size"
        )
    )
    evidence = (
        f"p={p}, master/ring per message size: "
        + "; ".join(f"{s:,} B {r} {g.value}" for s, r, g in seen_at)
        + f" (band ±{band:.0%}); {where}"
    )
    if why := oversubscribed(p, cores):
        return Finding(Verdict.NOT_MEASURED, f"not measured at p={p}: {why}; " + evidence)
    if p < SCALING_P:
        # Both send S per rank at p = 2: a timing there measures two implementations, not the
        # notes' claim, which is about how the two scale with p.
        return Finding(
            Verdict.NOT_MEASURED,
            f"not measured at p={p} < {SCALING_P}: the ring sends 2(p−1)/p·S = {2 * (p - 1) / p:.2g}·S per "
            f"rank, the master {p - 1}·S, so the claim's gain is not in play; " + evidence,
        )
    if seen is gain.Gain.FASTER:
        return Finding(Verdict.HOLDS, f"at {size:,} B over {p} ranks the ring is faster: " + evidence)
    if seen is gain.Gain.SLOWER:
        return Finding(Verdict.FAILS, f"at {size:,} B over {p} ranks the ring is SLOWER: " + evidence)
    if seen is gain.Gain.SAME:
        return Finding(Verdict.FAILS, f"at {size:,} B over {p} ranks no measurable difference: " + evidence)
    return Finding(
        Verdict.COULD_NOT_JUDGE,
        f"at {size:,} B over {p} ranks: too noisy to tell (too few repetitions); " + evidence,
    )


def launched_sweep(runs: Runs, algorithm: str, world: int) -> LaunchRecord:
    """One algorithm's row per message size on CPU (the sweep the reports plot: bus bandwidth vs
    size, one line per algorithm). The ring's point also judges the ring against the master
    (`judge_ring_faster_than_master`), the notes' speed claim."""
    table, p = launched_table(runs.allreduce("cpu", world))
    row = allreduce_sweep_row(table, p, algorithm, "cpu")
    if algorithm != "ring":
        return LaunchRecord(group=f"parallel.allreduce w{p} cpu", row=row)
    return LaunchRecord(
        f"ring_vs_master-w{p}",
        judge_ring_faster_than_master(ring_vs_master(table), p, gain.delta(), len(os.sched_getaffinity(0))),
        group=f"parallel.allreduce w{p} cpu",
        row=row,
    )
