"""Torch versions side by side (issue 59, item 5): what the same selection says under each version.

Per claim, its verdict in each version (a claim present in one version only is listed, never
dropped: deprecations and removals are what moves between releases), and each erratum of the notes
with the versions that found it. Per timed pair, the ratio of
its speed-up under the later version over the first (the ratio of ratios) with a 95% interval over
the runs, and ``changed`` only where that interval excludes ±δ (the catalogue's practical
significance: a change inside it is no change a user would act on, however sure). An ID is changed
where a claim's verdict differs or a pair changed.

The unit is the run (the process), as in the gate (reports/gate/__init__.py): each run gives a pair
one log speed-up, and the runs of one commit on one machine differ by more than each run's rounds
say. The interval is the gate's moderated t (each version's runs about their own mean, shrunk
toward the machine's between-run σ fitted over every pair, `reports.gate.model.machine_prior`), at
two-sided 95%; runs the load probe saw busy, or with unstable rounds, are left out as the gate
leaves them. Plain pandas and the gate's model: nothing here measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from harness.contract import gain
from reports import build, load
from reports.gate.compare import gated_pairs, groups_by_key
from reports.gate.model import (
    PRIOR_DF,
    PRIOR_SIGMA,
    Runs,
    RunSpeedup,
    difference,
    judged_on,
    machine_prior,
    t_quantile,
)

LEVEL = 0.95  # two-sided: a change either way is news


@dataclass(frozen=True)
class PairChange:
    case: str
    size: str
    where: str  # dtype and device (and timing mode where not warm)
    pair: str  # "fast ÷ slow"
    speedup_a: float  # geometric mean over the first version's usable runs
    speedup_b: float
    ratio: float  # speedup_b / speedup_a
    lo: float  # LEVEL interval of the ratio
    hi: float
    runs_a: int
    runs_b: int
    changed: bool
    why: str  # why no interval, where there is none


def _interval(
    a: list[RunSpeedup], b: list[RunSpeedup], prior: tuple[float, float]
) -> tuple[float, float, float]:
    """(d, lo, hi) of mean log speed-up in b − in a: the gate's moderated difference, two-sided LEVEL."""
    d, se, df, _ = difference(a, b, *prior)
    t = t_quantile(df, 1 - (1 - LEVEL) / 2)
    return d, d - t * se, d + t * se


def pair_changes(a: load.Results, b: load.Results, delta: float) -> list[PairChange]:
    """Every pair both versions timed, as `PairChange`s; `delta` the practical-significance band."""
    known = {**b.cases_of(), **a.cases_of()}
    groups_a, groups_b = groups_by_key(a), groups_by_key(b)
    runs_a, runs_b = Runs(a), Runs(b)
    common = [
        (key, fast, slow)
        for key, group in groups_a.items()
        if key in groups_b
        for fast, slow in gated_pairs(group, known)
    ]
    used = {
        (key, fast, slow): (judged_on(runs_a.of(key, fast, slow)), judged_on(runs_b.of(key, fast, slow)))
        for key, fast, slow in common
    }
    # The machine's between-run noise from every pair's runs in either version (each about its own
    # version's mean: a change between versions is not noise).
    prior = machine_prior([side for sides in used.values() for side in sides]) or (PRIOR_SIGMA, PRIOR_DF)
    edge = math.log(1 + delta)
    out = []
    for (key, fast, slow), (ua, ub) in used.items():
        case, size, dtype, device = key
        head = (case, size, f"{dtype} {device}", f"{fast} ÷ {slow}")
        if not ua or not ub:
            side = "the first version" if not ua else "the later version"
            nan = math.nan
            out.append(
                PairChange(
                    *head, nan, nan, nan, nan, nan, len(ua), len(ub), False, f"no usable run in {side}"
                )
            )
            continue
        d, lo, hi = _interval(ua, ub, prior)
        mean_a = sum(r.log for r in ua) / len(ua)
        out.append(
            PairChange(
                *head,
                math.exp(mean_a),
                math.exp(mean_a + d),
                math.exp(d),
                math.exp(lo),
                math.exp(hi),
                len(ua),
                len(ub),
                lo > edge or hi < -edge,
                "",
            )
        )
    return out


def claim_changes(claims: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (case, claim) over the versions given ({label: claims.csv's table}): its verdict
    in each, ``differs`` where they are not all the same or a version lacks it."""
    frames = []
    for label, table in claims.items():
        frames.append(table[["case", "claim", "verdict"]].assign(version=label))
    long = pd.concat(frames, ignore_index=True)
    wide = long.pivot_table(index=["case", "claim"], columns="version", values="verdict", aggfunc="first")
    wide = wide.reindex(list(claims), axis=1)
    wide = wide.astype(object).where(wide.notna(), "(absent)")
    wide["differs"] = wide.apply(lambda row: len(set(row)) > 1, axis=1)
    return wide.reset_index().rename_axis(columns=None)


def errata_changes(outcomes: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (case, erratum) found under any version given ({label: its outcomes}): whether
    each version found it, ``differs`` where not all did (a deprecation one torch warns of and
    another does not, an API one removes)."""
    from reports.verdicts import errata_of

    found: dict[tuple, dict] = {}
    for label, frame in outcomes.items():
        for case, group in frame.groupby("case", sort=True):
            for erratum in errata_of(group):
                row = found.setdefault(
                    (case, erratum.key), {"case": case, "erratum": f"{erratum.kind.value} at {erratum.where}"}
                )
                row[label] = True
    rows = [{**row, **{label: row.get(label, False) for label in outcomes}} for row in found.values()]
    table = pd.DataFrame(rows, columns=["case", "erratum", *outcomes])
    table["differs"] = ~table[list(outcomes)].all(axis=1) if rows else pd.Series(dtype=bool)
    return table


@dataclass
class Comparison:
    versions: list[str]
    claims: pd.DataFrame  # claim_changes
    pairs: pd.DataFrame  # one row per pair and later version: PairChange's fields
    errata: pd.DataFrame  # errata_changes
    ids: pd.DataFrame  # one row per ID: changed (any claim differs or any pair changed) and why


def compare(results: dict[str, load.Results], delta: float | None = None) -> Comparison:
    """Each later version against the first ({label: that version's runs, pooled}). `delta`: the
    band a speed change must clear; default the catalogue's floor (harness.contract.gain)."""
    labels = list(results)
    if len(labels) < 2:
        raise ValueError("compare two versions or more")
    delta = gain.delta() if delta is None else delta
    claims = claim_changes({label: build.tables(res).claims for label, res in results.items()})
    errata = errata_changes({label: res.outcomes for label, res in results.items()})
    first = results[labels[0]]
    pair_rows = []
    for label in labels[1:]:
        for change in pair_changes(first, results[label], delta):
            pair_rows.append({"version": label, **change.__dict__})
    pairs = pd.DataFrame(pair_rows)
    ids = []
    for case in sorted(set(claims["case"]) | set(pairs["case"] if not pairs.empty else [])):
        moved = claims[(claims["case"] == case) & claims["differs"]]
        sped = pairs[(pairs["case"] == case) & pairs["changed"]] if not pairs.empty else pairs
        why = [
            f"claim {c}: " + " → ".join(str(r[v]) for v in labels)
            for c, r in zip(moved["claim"], moved.to_dict("records"))
        ]
        why += [
            f"{r['pair']} {r['size']} under {r['version']}: speed-up "
            f"×{r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]"
            for r in sped.to_dict("records")
        ]
        moved_errata = errata[(errata["case"] == case) & errata["differs"]] if not errata.empty else errata
        why += [
            f"erratum {r['erratum']} found under " + ", ".join(v for v in labels if r[v])
            for r in moved_errata.to_dict("records")
        ]
        ids.append({"case": case, "changed": bool(why), "why": "; ".join(why)})
    return Comparison(labels, claims, pairs, errata, pd.DataFrame(ids))
