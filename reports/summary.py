"""summary.csv: per machine × case × size × dtype × device, the speedup of each fast variant over
each slow one (the pairs the case's rule names, and the optimized variants over the library's),
with its 95% interval, what that interval says against the machine's band of noise (`gain`), the
memory ratio, and the flags that say how far to trust the number (`quality`).

Where the run timed the pair side by side (``pairs``, harness.contract.record.PairTiming) the speed-up is
the median of the paired rounds' ratios (harness.contract.gain.paired_ratio); otherwise (files older than
schema 3, compiled and library comparisons) the ratio of the two variants' medians with a
bootstrap interval over rounds taken apart, flagged ``unpaired``. Runs of one machine are pooled
(their rounds concatenated, pairs kept paired); machines are never mixed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.contract import gain, rules
from harness.contract.record import KEY_COLUMNS
from reports import load, stats

SUMMARY_COLUMNS = [
    "machine",
    "case",
    "tier",
    "part",
    "size_label",
    "x_name",
    "x",
    "dtype",
    "device",
    "fast",
    "slow",
    "against",
    "fast_rounds",
    "slow_rounds",
    "fast_median_s",
    "slow_median_s",
    "speedup",
    "ci_low",
    "ci_high",
    "fast_peak_bytes",
    "slow_peak_bytes",
    "memory_ratio",
    "paired",
    "delta",
    "gain",
    "identical",
    "quality",
    "timing_mode",  # the columns before it keep their places for readers of older files
    # Each side with every large temporary's pages faulted on each call (harness.measure.faulted_pages),
    # and its ratio: the other end of what a default program sees; NaN where it was not timed so.
    "fast_faulted_s",
    "slow_faulted_s",
    "faulted_speedup",
    "faulted_busy",  # why a side's faulted figure was left out: the machine was busy then
    # On a GPU, each side replayed from a CUDA graph (the GPU's time alone), the speed-up between
    # those, and why the speed-up above is not the GPU's where the fast side ran at the host's
    # pace (harness.contract.gain.host_bound); NaN and "" where no graph figure was recorded.
    "fast_graph_s",
    "slow_graph_s",
    "graph_speedup",
    "host_bound",
]


def faulted_columns(fast_s: float, slow_s: float, busy: str = "") -> dict:
    """A pair's faulted-pages columns: each side's figure and slow ÷ fast (one figure a side, from
    fresh processes: a ratio of medians, no interval), and why a side's was left out."""
    ratio = slow_s / fast_s if fast_s > 0 and math.isfinite(slow_s) else math.nan
    return {
        "fast_faulted_s": fast_s,
        "slow_faulted_s": slow_s,
        "faulted_speedup": ratio,
        "faulted_busy": busy,
    }


class Group:
    """The variants measured for one machine × case × size × dtype × device, rounds pooled."""

    def __init__(self, key: dict):
        self.key = key
        self.roles: dict[str, str] = {}
        self.sources: dict[str, str] = {}  # compiled twin → the naive variant it compiles
        self.data: dict[str, np.ndarray] = {}
        self.peak: dict[str, float] = {}
        self.faulted: dict[str, float] = {}  # variant → median of its rows' faulted-pages figures
        self.faulted_busy: dict[str, str] = {}  # variant → why a row's faulted figure was left out
        self.runs: set = set()  # the runs its rows came from

    def pairs(self, case) -> list[tuple[str, str, str]]:
        """(fast, slow, against) for the pairs its run recorded as timed for this part, of the
        variants measured here (a file written before runs recorded them: as harness.contract.upgrade
        reads it), then each fast variant over the library and the compiled twins' pairs."""
        rule = getattr(case, "rule", None)
        out = [
            (f, s, a)
            for f, s, a in (case.timed_in(self.key.get("part") or "") if case is not None else ())
            if f in self.roles and s in self.roles
        ]
        # A recorded pair the recorded rule names the other way round (a file whose rule was
        # changed, a claim that the naive way wins) is read that way too, from the same rounds
        # turned over in `build`.
        recorded = {(f, s) for f, s, _ in out}
        out += [
            (f, s, a)
            for f, s, a in rules.named_pairs(rules.named_specs(rule), self.roles, "rule")
            if (s, f) in recorded and (f, s) not in recorded
        ]
        # In declaration order: a set's order moved with the hash seed, and summary.csv's rows with it.
        for fast in dict.fromkeys(f for f, _, _ in out):
            for lib in rules.expand("library", self.roles):
                if lib != fast and (fast, lib) not in [(f, s) for f, s, _ in out]:
                    out.append((fast, lib, "library"))
        # torch.compile of the naive way: compiled vs naive, and the trick vs the compiled naive.
        naive = rules.expand("naive", self.roles)
        for comp in rules.expand("compiled", self.roles):
            source = self.sources.get(comp)
            if source not in naive:  # its naive way was not timed here (too big, failed, deselected)
                continue
            out.append((comp, source, "compiled"))
            for fast, slow, against in list(out):  # the notes' trick, or the library where there is none
                if against in ("rule", "context", "library") and slow == source:
                    out.append((fast, comp, "compiled"))
        return out


# The timing mode is part of the key: a variant timed warm, cold-L2 and as a graph replay is three
# samples of three things, never one.
PLACE = ["machine", *KEY_COLUMNS]  # where a point is: the machine, then the contract's key
KEYS = [*PLACE, "timing_mode"]


def groups(rows: pd.DataFrame) -> list[Group]:
    """One `Group` per key; pandas finds the row indices of each (key, variant) in one pass."""
    if rows.empty:
        return []
    cols = {
        c: rows[c].to_numpy()
        for c in (
            "tier",
            "part",
            "x_name",
            "x",
            "role",
            "compiled_from",
            "peak_bytes",
            "data",
            "run",
            "faulted_median_s",
            "faulted_busy",
        )
    }
    out: dict[tuple, Group] = {}
    for (*key, variant), idx in load.group_positions(rows, KEYS + ["variant"]):
        key = tuple(key)
        group = out.get(key)
        if group is None:
            i = idx[0]
            group = out[key] = Group(
                {
                    **dict(zip(KEYS, key)),
                    "tier": cols["tier"][i],
                    "part": cols["part"][i],
                    "x_name": cols["x_name"][i],
                    "x": cols["x"][i],
                }
            )
        group.roles[variant] = cols["role"][idx[0]]
        source = cols["compiled_from"][idx[0]]
        if isinstance(source, str) and source:
            group.sources[variant] = source
        group.runs.update(cols["run"][idx])
        group.data[variant] = (
            np.concatenate(list(cols["data"][idx])) if len(idx) > 1 else cols["data"][idx[0]]
        )
        group.peak[variant] = (
            float(np.nanmax(cols["peak_bytes"][idx]))
            if np.isfinite(cols["peak_bytes"][idx]).any()
            else float("nan")
        )
        faulted = cols["faulted_median_s"][idx].astype(float)
        faulted = faulted[np.isfinite(faulted)]
        group.faulted[variant] = float(np.median(faulted)) if faulted.size else math.nan
        group.faulted_busy[variant] = "; ".join(
            dict.fromkeys(b for b in cols["faulted_busy"][idx] if isinstance(b, str) and b)
        )
    return list(out.values())


def gpu_only_columns(fast: str, fast_median_s: float, fast_graph_s: float, slow_graph_s: float) -> dict:
    """A pair's GPU-only columns: each side's graph replay, their ratio, and the host-bound flag
    where the fast side's rounds read over gain.HOST_BOUND_LIMIT × its replay."""
    ratio = slow_graph_s / fast_graph_s if fast_graph_s > 0 else math.nan
    flag = ""
    if math.isfinite(fast_graph_s) and gain.host_bound(fast_median_s, fast_graph_s):
        flag = (
            f"host-bound: {fast} ran at the host's pace ({fast_median_s * 1e6:.3g} µs a call in its "
            f"rounds, {fast_graph_s * 1e6:.3g} µs replayed from a CUDA graph), so this speed-up is "
            f"the host's, not the GPU's" + (f" (GPU-only: {ratio:.3g}×)" if math.isfinite(ratio) else "")
        )
    return {
        "fast_graph_s": fast_graph_s,
        "slow_graph_s": slow_graph_s,
        "graph_speedup": ratio,
        "host_bound": flag,
    }


PAIR_KEYS = [*PLACE, "fast", "slow"]


def pooled_pairs(pairs: pd.DataFrame | None) -> dict[tuple, dict]:
    """Per machine × case × size × dtype × device × (fast, slow): the paired rounds of every run
    pooled (each run's rounds stay paired), the largest noise floor any run measured, whether any
    run was busy, and whether every run saw bitwise-identical outputs."""
    if pairs is None or pairs.empty:
        return {}
    out = {}
    for key, part in pairs.groupby(PAIR_KEYS, sort=False):
        floors = part["noise_floor"].astype(float)
        identical = part["identical"].tolist()
        first = part.iloc[0]
        out[key] = {
            "part": first["part"],
            "against": first["against"],
            "x_name": first["x_name"],
            "x": first["x"],
            "fast": np.concatenate(list(part["fast_data"])),
            "slow": np.concatenate(list(part["slow_data"])),
            "noise_floor": float(floors.max()) if floors.notna().any() else None,
            "busy": "; ".join(b for b in dict.fromkeys(part["busy"]) if b),
            "identical": all(v is True for v in identical) if identical else None,
            # The runs' GPU-only figures, their median (NaN in files before they were recorded).
            "fast_graph_s": _median_of(part.get("fast_graph_s")),
            "slow_graph_s": _median_of(part.get("slow_graph_s")),
        }
    return out


def _median_of(column) -> float:
    values = [] if column is None else [float(v) for v in column if pd.notna(v)]
    return float(np.median(values)) if values else math.nan


def _busy_runs(pairs: pd.DataFrame | None) -> dict:
    """run → how busy its load probe found the machine, where it found it busy for any pair."""
    if pairs is None or pairs.empty or "run" not in pairs:
        return {}
    flagged = pairs[pairs["busy"].fillna("").astype(str) != ""]
    return {
        run: f"machine busy during this run: {len(part)} of {int((pairs['run'] == run).sum())} probed pairs"
        for run, part in flagged.groupby("run", sort=False)
    }


def quality(paired: bool, rounds: int, busy: str, delta: float, host_bound: str = "") -> str:
    """The flags a number carries to wherever it is shown: why it may not be what it seems."""
    flags = [host_bound] if host_bound else []
    if not paired:
        flags.append("unpaired: the two sides were timed apart")
    if rounds < gain.MIN_PAIRS:
        # Paired: no interval at all (gain.paired_ratio). Apart: a bootstrap of so few medians
        # is shown, but it is rough, and the flag must not contradict the interval beside it.
        flags.append(
            f"{rounds} rounds: too few for an interval"
            if paired
            else f"{rounds} rounds a side: a rough interval"
        )
    if busy:
        flags.append(busy if busy.startswith("machine busy") else f"machine busy ({busy})")
    if delta > gain.DELTA_FLOOR:  # above the catalogue's floor: the machine's noise widened it
        flags.append(f"noise floor {delta:.0%}: only gains beyond ±{delta:.0%} are told apart")
    return "; ".join(flags)


def build(
    rows: pd.DataFrame, cases: dict, pairs: pd.DataFrame | None = None, floors: dict | None = None
) -> pd.DataFrame:
    """``cases``: machine → case ID → declaration (harness.contract.record.CaseInfo), as each run recorded;
    ``pairs``: the pairs timed side by side (reports.load.Results.pairs). A group's band is never
    below the δ floor its runs recorded (`floors`, machine → δ; else the rows' widest).

    A row per pair each group declares; a pair timed side by side whose sides were not also
    timed alone (a `-k test_pair` run) gets its row from its paired rounds alone."""
    if floors is None:
        floors = rows.groupby("machine")["delta_floor"].max().to_dict() if "delta_floor" in rows else {}
    paired_data = pooled_pairs(pairs)
    busy_runs = _busy_runs(pairs)
    out = []
    every_group = groups(rows)
    for group in every_group:
        case = cases.get(group.key["machine"], {}).get(group.key["case"])
        key = tuple(group.key[k] for k in PLACE)
        warm = group.key["timing_mode"] == "warm"  # pairs are timed warm (harness.point.pair_benchmark)
        floor = float(floors.get(group.key["machine"], gain.DELTA_FLOOR))
        for fast, slow, against in group.pairs(case):
            together = paired_data.get((*key, fast, slow)) if warm else None
            reverse = paired_data.get((*key, slow, fast)) if warm else None
            if together is None and reverse is not None:
                # A rule naming the pair the other way round (a file whose rule was changed, a
                # claim that the naive way wins) reads the same paired rounds, busy flag included.
                together = {**reverse, "fast": reverse["slow"], "slow": reverse["fast"]}
            if together is not None:
                ratio = gain.paired_ratio(together["slow"], together["fast"])
                speedup, lo, hi, rounds = ratio.point, ratio.low, ratio.high, ratio.n
                band, busy, identical = (
                    gain.delta(together["noise_floor"], floor),
                    together["busy"],
                    together["identical"],
                )
                gpu_only = gpu_only_columns(
                    fast,
                    float(np.median(together["fast"])),
                    together.get("fast_graph_s", math.nan),
                    together.get("slow_graph_s", math.nan),
                )
            else:
                speedup, lo, hi = stats.ratio_of_medians(group.data[slow], group.data[fast])
                rounds = min(group.data[slow].size, group.data[fast].size)
                # Timed apart (launched ranks, no load probe of their own): as busy as the run's
                # probed pairs found the machine while it ran.
                busy = "; ".join(
                    dict.fromkeys(busy_runs[r] for r in sorted(group.runs, key=str) if r in busy_runs)
                )
                band, identical = gain.delta(None, floor), None
                gpu_only = gpu_only_columns(fast, math.nan, math.nan, math.nan)
            fp, sp = group.peak[fast], group.peak[slow]
            out.append(
                {
                    **group.key,
                    "fast": fast,
                    "slow": slow,
                    "against": against,
                    "fast_rounds": group.data[fast].size,
                    "slow_rounds": group.data[slow].size,
                    "fast_median_s": float(np.median(group.data[fast])),
                    "slow_median_s": float(np.median(group.data[slow])),
                    "speedup": speedup,
                    "ci_low": lo,
                    "ci_high": hi,
                    "fast_peak_bytes": fp,
                    "slow_peak_bytes": sp,
                    "memory_ratio": sp / fp if fp > 0 else math.nan,
                    "paired": together is not None,
                    "delta": band,
                    "gain": gain.classify(gain.Ratio(speedup, lo, hi), band).value,
                    "identical": identical,
                    "quality": quality(together is not None, rounds, busy, band, gpu_only["host_bound"]),
                    **gpu_only,
                    **faulted_columns(
                        group.faulted.get(fast, math.nan),
                        group.faulted.get(slow, math.nan),
                        "; ".join(
                            b for b in (group.faulted_busy.get(fast), group.faulted_busy.get(slow)) if b
                        ),
                    ),
                }
            )
    shown = {tuple(r[k] for k in PAIR_KEYS) for r in out if r["timing_mode"] == "warm"}
    solo = {
        (*(group.key[k] for k in PLACE), variant)
        for group in every_group
        if group.key["timing_mode"] == "warm"
        for variant in group.data
    }
    for key, together in paired_data.items():
        where = dict(zip(PAIR_KEYS, key))
        machine, case_id, fast, slow = where["machine"], where["case"], where["fast"], where["slow"]
        place = key[: len(PLACE)]
        if key in shown or (*place, slow, fast) in shown:
            continue
        if (*place, fast) in solo and (*place, slow) in solo:
            continue  # both sides timed alone too: the pairs their group declares are its rows
        case = cases.get(machine, {}).get(case_id)
        floor = float(floors.get(machine, gain.DELTA_FLOOR))
        ratio = gain.paired_ratio(together["slow"], together["fast"])
        band = gain.delta(together["noise_floor"], floor)
        gpu_only = gpu_only_columns(
            fast, float(np.median(together["fast"])), together["fast_graph_s"], together["slow_graph_s"]
        )
        out.append(
            {
                **dict(zip(PAIR_KEYS, key)),
                "tier": getattr(case, "tier", None),
                "part": together["part"],
                "x_name": together["x_name"],
                "x": together["x"],
                "timing_mode": "warm",
                "against": together["against"],
                "fast_rounds": together["fast"].size,
                "slow_rounds": together["slow"].size,
                "fast_median_s": float(np.median(together["fast"])),
                "slow_median_s": float(np.median(together["slow"])),
                "speedup": ratio.point,
                "ci_low": ratio.low,
                "ci_high": ratio.high,
                "fast_peak_bytes": math.nan,
                "slow_peak_bytes": math.nan,
                "memory_ratio": math.nan,
                "paired": True,
                "delta": band,
                "gain": gain.classify(ratio, band).value,
                "identical": together["identical"],
                "quality": quality(True, ratio.n, together["busy"], band, gpu_only["host_bound"]),
                **gpu_only,
                **faulted_columns(math.nan, math.nan),
            }
        )
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)
