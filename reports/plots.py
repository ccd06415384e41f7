"""PNG plots (matplotlib's Agg backend, no display): per case timings and memory, the overview of
speedups with CI whiskers, and a roofline where the machine's ceilings were measured.

Each function returns PNG bytes; the caller writes them and embeds them in the HTML. Figures are
built with `matplotlib.figure.Figure` directly (no pyplot state, nothing kept between calls).
"""

from __future__ import annotations

import io
import itertools
import json
import math
import textwrap

import matplotlib

matplotlib.use("Agg")
# Labels come from results files: drawn as the text they are, never parsed as mathtext ("$^$" in a
# variant's name stopped a build with a parser error).
matplotlib.rcParams["text.parse_math"] = False
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from harness.contract import gain  # noqa: E402

DPI = 80


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    return buf.getvalue()


_PLAIN = FuncFormatter(lambda v, _: f"{v:g}")  # log axes' default labels go through mathtext: slow


def _spans_decades(values) -> bool:
    values = np.asarray([v for v in values if v and v > 0 and math.isfinite(v)], dtype=float)
    return values.size > 1 and values.max() / values.min() >= 10


def by_timing_mode(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows timed in a GPU mode other than warm drawn as their own line (``variant [cold_l2]``),
    never averaged into the warm one."""
    if "timing_mode" not in rows:
        return rows
    other = rows["timing_mode"].fillna("warm") != "warm"
    if not other.any():
        return rows
    labels = rows["variant"].where(~other, rows["variant"] + " [" + rows["timing_mode"] + "]")
    return rows.assign(variant=labels)


def case_plot(rows: pd.DataFrame, title: str) -> bytes:
    """Rows of one machine × case: time (and memory) vs size, one line per variant, one column per
    device × dtype, shaded between the first and third quartiles."""
    rows = by_timing_mode(rows)
    has_memory = rows["peak_bytes"].notna().any()
    # One column per part × device × dtype: each part of a case is its own comparison, with its
    # own x axis (layout.contiguous's ops over n, its conv over channels).
    if "part" not in rows:
        rows = rows.assign(part="")
    rows = rows.assign(part=rows["part"].fillna(""))
    panels = list(rows.groupby(["part", "device", "dtype"], sort=False))
    model = _cost_model_points(rows)
    nrows = (2 if has_memory else 1) + (model is not None)
    width, height = 4.2 * len(panels) + 0.6, 3.0 * nrows + 0.8
    fig = Figure(figsize=(width, height), dpi=DPI)
    # Fixed margins: constrained layout measures every tick label's extent, most of the cost.
    fig.subplots_adjust(
        left=0.8 / width,
        right=1 - 0.2 / width,
        bottom=0.5 / height,
        top=1 - 0.8 / height,
        wspace=0.35,
        hspace=0.45,
    )
    axes = fig.subplots(nrows, len(panels), squeeze=False)
    for col, ((part_name, device, dtype), part) in enumerate(panels):
        x_name = part["x_name"].iloc[0] or "size"
        # Runs of one machine pooled: median of the per-run medians per variant and size.
        agg = (
            part.groupby(["variant", "x"], sort=False)
            .agg(
                median=("median_s", "median"),
                q1=("q1_s", "median"),
                q3=("q3_s", "median"),
                peak=("peak_bytes", "max"),
            )
            .reset_index()
            .sort_values("x")
        )
        time_ax = axes[0][col]
        for variant, line in agg.groupby("variant", sort=False):
            drawn = time_ax.plot(line["x"], line["median"] * 1e3, marker="o", ms=3, label=variant)
            time_ax.fill_between(
                line["x"],
                line["q1"] * 1e3,
                line["q3"] * 1e3,
                alpha=0.2,
                color=drawn[0].get_color(),
                linewidth=0,
            )
            if has_memory:
                axes[1][col].plot(line["x"], line["peak"] / 2**20, marker="o", ms=3, label=variant)
        time_ax.set_title(" · ".join(t for t in (part_name, device, dtype) if t), fontsize=9)
        time_ax.set_ylabel("median time per call (ms)")
        column = [time_ax] + ([axes[1][col]] if has_memory else [])
        for ax in column:
            ax.set_xlabel(x_name)
            if _spans_decades(agg["x"]):
                ax.set_xscale("log")
                ax.xaxis.set_major_formatter(_PLAIN)
            ax.grid(alpha=0.3)
            ax.minorticks_off()
        if _spans_decades(agg["median"]):
            time_ax.set_yscale("log")
            time_ax.yaxis.set_major_formatter(_PLAIN)
        if has_memory:
            axes[1][col].set_ylabel("peak memory (MiB)")
            if _spans_decades(agg["peak"]):
                axes[1][col].set_yscale("log")
                axes[1][col].yaxis.set_major_formatter(_PLAIN)
            axes[1][col].minorticks_off()
        time_ax.minorticks_off()
        if col == 0 or part_name:  # a part names its own variants
            time_ax.legend(fontsize=6 if part_name else 7)
    if model is not None:
        _draw_cost_model(axes[-1], model)
    fig.suptitle(textwrap.fill(title, 40 * len(panels) + 20), fontsize=10)
    return _png(fig)


def _cost_model_points(rows: pd.DataFrame) -> pd.DataFrame | None:
    """A cost model's measured and predicted times, where a case recorded them (extra_info
    ``points``: algorithm, bytes, measured_s, model_s, e.g. the all-reduce α–β model)."""
    if "extra" not in rows:
        return None
    frames = []
    for label, extra in zip(rows["size_label"], rows["extra"]):
        if not isinstance(extra, str) or '"points"' not in extra:
            continue
        points = json.loads(extra).get("points")
        points = json.loads(points) if isinstance(points, str) else points
        if points:
            frames.append(pd.DataFrame(points).assign(setting=label))
    if not frames:
        return None
    table = pd.concat(frames, ignore_index=True)
    # One setting (e.g. world size w4): models of different settings must not share a line.
    table = table[table["setting"] == max(table["setting"], key=lambda v: (len(v), v))]
    needed = {"algorithm", "bytes", "measured_s", "model_s"}
    return table if needed <= set(table.columns) else None


def _draw_cost_model(row_axes, points: pd.DataFrame) -> None:
    """Measured (markers) against the model (lines), per algorithm, log-log: how the suite speaks
    about sizes and world sizes it cannot run."""
    ax = row_axes[0]
    for extra_ax in row_axes[1:]:
        extra_ax.set_visible(False)
    agg = points.groupby(["algorithm", "bytes"], sort=True)[["measured_s", "model_s"]].median().reset_index()
    for algorithm, line in agg.groupby("algorithm", sort=False):
        drawn = ax.plot(line["bytes"], line["model_s"] * 1e3, linestyle="--", linewidth=1)
        ax.plot(
            line["bytes"],
            line["measured_s"] * 1e3,
            marker="o",
            ms=3,
            linestyle="none",
            color=drawn[0].get_color(),
            label=f"{algorithm} (o measured, -- model)",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(_PLAIN)
    ax.yaxis.set_major_formatter(_PLAIN)
    ax.set_xlabel("message bytes")
    ax.set_ylabel("time (ms)")
    ax.set_title(f"cost model vs measured ({points['setting'].iloc[0]})", fontsize=9)
    ax.grid(alpha=0.3)
    ax.minorticks_off()
    ax.legend(fontsize=6)


def overview_plot(summary: pd.DataFrame, title: str) -> bytes:
    """Speedup of each case's claimed pair at its largest size, with the 95% CI as whiskers."""
    # The notes' pairs, and torch.compile's: compiled naive vs naive, optimized vs compiled naive.
    shown = summary["against"].isin(["rule", "context", "compiled"])
    rule = summary[shown].assign(_order=range(int(shown.sum())))
    if "part" not in rule:
        rule = rule.assign(part="")
    last = (
        rule.sort_values(["x", "_order"])
        .groupby(["case", "part", "fast", "slow", "device", "dtype"], sort=False, dropna=False)
        .tail(1)
    )
    # Sorted by the speed-up, so the picture reads as a ranking: what pays most at the top, the
    # band of no measurable difference in the middle, what costs at the bottom.
    last = last.sort_values(["speedup", "case", "fast"], ascending=[False, True, True], na_position="last")
    labels = [
        f"{r.case}: {r.fast}/{r.slow} ({r.device} {r.dtype}, {r.size_label})" for r in last.itertuples()
    ]
    fig = Figure(figsize=(11, 0.32 * max(len(labels), 1) + 1.8), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(labels))
    speed = last["speedup"].to_numpy(dtype=float)
    # A percentile interval need not contain the point estimate (a bimodal sample's median):
    # whiskers are clipped at the point rather than drawn negative.
    lo = np.clip(np.nan_to_num(speed - last["ci_low"].to_numpy(dtype=float), nan=0.0), 0, None)
    hi = np.clip(np.nan_to_num(last["ci_high"].to_numpy(dtype=float) - speed, nan=0.0), 0, None)
    gains = last["gain"].fillna("") if "gain" in last else pd.Series([""] * len(last))
    deltas = last["delta"].to_numpy(dtype=float) if "delta" in last else np.full(len(last), np.nan)
    band = float(np.nanmax(deltas)) if np.isfinite(deltas).any() else gain.DELTA_FLOOR
    # The widest band of the run: inside it a pair is "no measurable difference" (harness.contract.gain).
    ax.axvspan(
        1 / (1 + band), 1 + band, color="grey", alpha=0.15, label=f"±{band:.0%}: no measurable difference"
    )
    # A pair timed on a busy machine decides nothing (reports.verdicts): drawn hollow, so its
    # number is not read as a finding.
    quality = last["quality"].fillna("").astype(str) if "quality" in last else pd.Series([""] * len(last))
    busy = quality.str.contains("machine busy").to_numpy()
    for name, color in _GAIN_COLORS.items():
        for hollow in (False, True):
            pick = (gains == name).to_numpy() & (busy == hollow)
            if pick.any():
                ax.errorbar(
                    speed[pick],
                    y[pick],
                    xerr=[lo[pick], hi[pick]],
                    fmt="o",
                    ms=4,
                    capsize=3,
                    color=color,
                    mfc="none" if hollow else color,
                    label=f"{name}, timed on a busy machine: not a finding" if hollow else name,
                )
    rest = ~gains.isin(list(_GAIN_COLORS)).to_numpy()
    if rest.any():
        ax.errorbar(speed[rest], y[rest], xerr=[lo[rest], hi[rest]], fmt="o", ms=4, capsize=3, color="C0")
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_PLAIN)
    ax.set_xlabel("speedup (slow ÷ fast, median of paired rounds), 95% CI")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(loc="lower right", fontsize=7)
    # Over the whole figure, not the axes: the labels take the left half, and an axes title that
    # long was cut at the right edge.
    fig.suptitle(textwrap.fill(title, 150), fontsize=10)
    return _png(fig)


# One colour per answer of harness.contract.gain.classify, the same words as the tables.
_GAIN_COLORS = {
    "faster": "tab:green",
    "no measurable difference": "tab:grey",
    "too noisy to tell": "tab:orange",
    "slower": "tab:red",
}


def roofline_plot(rows: pd.DataFrame, title: str) -> bytes | None:
    """Achieved GFLOP/s against arithmetic intensity (flop/byte), under the machine's measured
    compute and copy-bandwidth ceilings. None when no row has both a cost model and ceilings."""
    usable = rows[
        rows["flops_ceiling"].notna()
        & rows["copy_ceiling"].notna()
        & (rows["bytes"] > 0)
        & rows["gflops_per_s"].notna()
    ]
    if usable.empty:
        return None
    usable = by_timing_mode(usable)
    entries = (
        usable.groupby(["device", "dtype"]).ngroups
        + usable.groupby(["case", "variant", "device", "dtype"]).ngroups
    )
    columns = 1 + entries // 28  # a column of the legend holds ~28 entries at 6 pt beside a 4.5 in plot
    fig = Figure(figsize=(7 + 2.2 * columns, 4.5), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    intensity = usable["flops"] / usable["bytes"]
    # Ten colours, then the next marker: drawn as needed (a list of every style cost 18 ms a plot).
    styles = ((f"C{i % 10}", "osD^vPX*"[(i // 10) % 8]) for i in itertools.count())
    for (device, dtype), part in usable.groupby(["device", "dtype"], sort=False):
        peak, bw = part["flops_ceiling"].iloc[0], part["copy_ceiling"].iloc[0]
        grid = np.logspace(
            math.log10(max(intensity.min() / 4, 1e-3)), math.log10(intensity.max() * 4 + 1e-3), 100
        )
        ax.plot(
            grid,
            np.minimum(peak, bw * grid) / 1e9,
            linestyle="--",
            linewidth=1,
            label=f"ceiling {device} {dtype}",
        )
        for (case, variant), pts in part.groupby(["case", "variant"], sort=False):
            # Ten colours × eight markers: no two of up to 80 entries look alike.
            style = next(styles)
            ax.scatter(
                pts["flops"] / pts["bytes"],
                pts["gflops_per_s"],
                s=14,
                color=style[0],
                marker=style[1],
                label=f"{case}: {variant} ({device} {dtype})",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(_PLAIN)  # labels are never parsed as mathtext (text.parse_math off)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (flop / byte of the cost model)")
    ax.set_ylabel("achieved GFLOP/s")
    # Beside the axes, never over them: with dozens of variants an inside legend hides the points.
    ax.legend(fontsize=6, ncols=columns, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    return _png(fig)
