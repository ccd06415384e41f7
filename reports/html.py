"""index.html: one self-contained page (CSS inline, images as data URIs, no script, no network).

Every catalogue ID gets a ``<section class="case">`` — measured or not — so the page doubles as a
coverage map; cases in the results that the code no longer knows get ``<section class="unknown">``.
All text that comes from results files or case declarations goes through `esc`.
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field

import pandas as pd

from harness.contract import record, rules

BADGE = {
    "holds": "#1a7f37",
    "fails": "#cf222e",
    "depends": "#9a6700",
    "not measured": "#6e7781",
    "could not judge": "#953800",
}
LEGEND = (
    "<p class=meta><b>Two verdicts per technique and machine.</b> Technique: "
    "<b>holds</b> — correct against an independent truth and, where the notes claim a gain, the gain "
    "shows beyond the machine's noise band (95% interval above 1 + δ, δ ≥ 5%); <b>fails</b> — a wrong "
    "result, a slower way, or no measurable difference where the notes promise a gain; <b>depends</b> "
    "— on hardware, version or size (named), or too noisy to tell on this machine; <b>not measured</b> "
    "— with the reason. Notes: <b>correct</b>, or the errata found (typo, removed or deprecated API, "
    "wrong default, wrong shape or formula, wrong statement); an erratum never decides the technique's "
    "verdict. Comparisons marked (context) are a better way the catalogue adds; they decide nothing.</p>"
)

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#1f2328}
h1{margin-top:24px} h2{border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0;font-size:12px} \
td,th{border:1px solid #d0d7de;padding:2px 6px;text-align:left}
th{background:#f6f8fa} .badge{color:#fff;border-radius:10px;padding:1px 8px;font-size:12px;white-space:nowrap}
section{border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;margin:12px 0}
.meta{color:#57606a;font-size:12px} img{max-width:100%;display:block;margin:6px 0}
.toc{columns:2;font-size:13px} .toc li{break-inside:avoid} code{font-size:12px}
.errors{color:#9a3412} ul.errors{font-size:12px} .warn{color:#9a6700}
table.matrix tr.differs td{background:#fff8c5} table.matrix tr.claim-differs td{font-size:11px}
"""


def esc(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return html.escape(str(value), quote=True)


def badge(verdict: str) -> str:
    return f'<span class="badge" style="background:{BADGE.get(verdict, "#6e7781")}">{esc(verdict)}</span>'


def notes_badge(notes_verdict: str) -> str:
    colour = "#1a7f37" if notes_verdict == "correct" else "#8250df"
    return f'<span class="badge" style="background:{colour}">notes: {esc(notes_verdict)}</span>'


def img(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def fmt(value, spec: str = ".3g") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return format(value, spec)


@dataclass
class CaseView:
    id: str
    tier: int | None
    technique: str
    claim: str
    source: str
    known: bool
    judgements: dict = field(default_factory=dict)  # machine → Judgement
    tables: dict = field(default_factory=dict)  # machine → summary rows (DataFrame)
    plots: dict = field(default_factory=dict)  # machine → PNG bytes
    findings: dict = field(default_factory=dict)  # machine → [(check, device, verdict, evidence)]
    compile_findings: dict = field(default_factory=dict)  # machine → lines (verdicts.compile_findings)
    reason: str = ""  # why nothing was measured anywhere
    rules: dict = field(default_factory=dict)  # machine → the verdict rule its run recorded
    claims: dict = field(default_factory=dict)  # machine → the claims its run recorded


def _summary_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return ""
    # Where the sides were also timed with pages faulted (harness.measure.faulted_pages), both
    # states, named: the medians are a settled heap's, and a default program lies between the two.
    faulted = "fast_faulted_s" in frame and frame["fast_faulted_s"].notna().any()
    # On a GPU, each side replayed from a CUDA graph: the GPU's time alone, beside the rounds'.
    graphed = "fast_graph_s" in frame and frame["fast_graph_s"].notna().any()
    head = (
        "<tr><th>size</th><th>dtype</th><th>device</th><th>compared (faster? ÷ baseline)</th>"
        "<th>its median</th><th>baseline median</th><th>speed-up: baseline ÷ it [95% CI]</th>"
        "<th>what it says</th><th>memory ratio (baseline ÷ it)</th><th>how sure</th>"
        + (f"<th>{esc(record.FAULTED_PAGES)}: it, baseline, speed-up</th>" if faulted else "")
        + ("<th>GPU only (CUDA-graph replay): it, baseline, speed-up</th>" if graphed else "")
        + "</tr>"
    )
    body = []
    for r in frame.itertuples():
        ci = f" [{fmt(r.ci_low)}, {fmt(r.ci_high)}]" if math.isfinite(r.ci_low) else ""
        kind = {"context": " (context)", "library": " (vs the library)", "compiled": " (torch.compile)"}.get(
            r.against, ""
        )
        quality = getattr(r, "quality", "") or ""
        sure = f'<span class="warn">{esc(quality)}</span>' if quality else "paired rounds, quiet"
        body.append(
            f"<tr><td>{esc(r.size_label)}</td><td>{esc(r.dtype)}</td><td>{esc(r.device)}</td>"
            f"<td>{esc(r.fast)} vs {esc(r.slow)}{kind}</td><td>{fmt(r.fast_median_s * 1e3)} ms</td>"
            f"<td>{fmt(r.slow_median_s * 1e3)} ms</td><td>{fmt(r.speedup)}×{ci}</td>"
            f"<td>{esc(getattr(r, 'gain', ''))}</td><td>{fmt(r.memory_ratio)}</td><td>{sure}</td>"
            + (f"<td>{_faulted_cell(r)}</td>" if faulted else "")
            + (f"<td>{_graph_cell(r)}</td>" if graphed else "")
            + "</tr>"
        )
    caption = (
        f"<p class=meta>Medians and speed-ups are a {esc(record.SETTLED_HEAP)}'s (glibc's "
        f"thresholds pinned: blocks under 32 MiB reused); the last column times each side again in "
        f"a fresh process with glibc's initial 128 KiB mmap threshold held, every larger block "
        f"mapped and faulted on each call (torch.utils.benchmark). A program left at glibc's "
        f"defaults mostly sees a figure between the two, which one depending on its own heap; "
        f"neither is exact for it (docs/measuring.md, How it measures).</p>"
        if faulted
        else ""
    )
    return f"<table>{head}{''.join(body)}</table>{caption}"


def _graph_cell(r) -> str:
    fast, slow, ratio = r.fast_graph_s, r.slow_graph_s, r.graph_speedup
    if not (math.isfinite(fast) or math.isfinite(slow)):
        return "not captured"
    cell = f"{fmt(fast * 1e3)} ms, {fmt(slow * 1e3)} ms, {fmt(ratio)}×"
    flag = " <span class=\"warn\">(host-bound: the rounds' speed-up is the host's)</span>"
    return cell + (flag if r.host_bound else "")


def _faulted_cell(r) -> str:
    fast, slow, ratio = r.fast_faulted_s, r.slow_faulted_s, r.faulted_speedup
    busy = getattr(r, "faulted_busy", "") or ""
    busy = f'<span class="warn">left out, machine busy: {esc(busy)}</span>' if busy else ""
    if not (math.isfinite(fast) or math.isfinite(slow)):
        return busy or "not timed"
    return f"{fmt(fast * 1e3)} ms, {fmt(slow * 1e3)} ms, {fmt(ratio)}×" + (f" ({busy})" if busy else "")


def _errata(j) -> str:
    if not j.errata:
        return f"<p>{notes_badge(j.notes_verdict)} the notes as written: no erratum found by the checks</p>"
    items = "".join(
        f"<li><b>{esc(e.kind.value)}</b>"
        + (f" <span class=meta>({esc(e.where)})</span>" if e.where else "")
        + f": <code>{esc(e.quote)}</code> — {esc(e.evidence)}</li>"
        for e in j.errata
    )
    return f"<p>{notes_badge(j.notes_verdict)} the notes as written:</p><ul>{items}</ul>"


def _claims_table(j) -> str:
    """The ID's claims as rows under its headline: each with its verdict and what decided it."""
    head = (
        "<tr><th>claim</th><th>kind</th><th>the notes</th><th>verdict</th><th>decided by · evidence</th></tr>"
    )
    body = "".join(
        f"<tr class=claim><td><code>{esc(c.claim.id)}</code></td><td>{esc(c.claim.kind.value)}</td>"
        f"<td>{esc(c.claim.quote)} <span class=meta>({esc(c.claim.file)})</span>"
        + (f"<br><span class=meta>read as: {esc(c.claim.reading)}</span>" if c.claim.reading else "")
        + "</td>"
        f"<td>{badge(c.verdict)}</td>"
        f"<td><span class=meta>{esc(c.decided_by)}</span><br>{esc(c.evidence)}</td></tr>"
        for c in j.claims
    )
    return f'<table class="claims">{head}{body}</table>'


def _section(view: CaseView, machines: list[str], css_class: str) -> str:
    parts = [
        f'<section class="{css_class}" id="{esc(view.id)}">',
        f"<h3><code>{esc(view.id)}</code> {'(unknown case)' if css_class == 'unknown' else ''}</h3>",
    ]
    if view.technique:
        parts.append(f"<p><b>Technique:</b> {esc(view.technique)}</p>")
    parts.append(f"<p><b>Claim:</b> {esc(view.claim) or '<i>no case yet</i>'}</p>")
    parts.append(
        f'<p class="meta">Source: {esc(view.source)}'
        + (f" · tier {esc(view.tier)}" if view.tier else "")
        + "</p>"
    )
    if not view.judgements:
        parts.append(f"<p>{badge('not measured')} {esc(view.reason)}</p>")
    for machine in machines:
        if machine not in view.judgements:
            continue
        j = view.judgements[machine]
        parts.append(f"<h4>{esc(machine)}</h4><p>technique: {badge(j.verdict)} {esc(j.evidence)}</p>")
        if j.claims:
            parts.append(_claims_table(j))
        parts.append(_errata(j))
        if j.errors:
            shown = j.errors[:5]
            more = f"<li>… and {len(j.errors) - len(shown)} more</li>" if len(j.errors) > len(shown) else ""
            parts.append(
                f'<p class="errors"><b>{len(j.errors)} failed test(s)</b> — the technique cannot read '
                "holds while one is red; each fails its claim or leaves it undecided:</p><ul class=errors>"
                + "".join(f"<li>{esc(e)}</li>" for e in shown)
                + more
                + "</ul>"
            )
        for line in view.compile_findings.get(machine, ()):
            parts.append(f'<p class="compile"><b>torch.compile:</b> {esc(line)}</p>')
        findings = view.findings.get(machine)
        if findings:
            parts.append(
                "<ul>"
                + "".join(
                    f"<li>check <code>{esc(name)}</code> ({esc(device)}): "
                    f"{badge(verdict) if isinstance(verdict, str) else '<i>measured</i>'} "
                    f"{esc(evidence)}</li>"
                    for name, device, verdict, evidence in findings
                )
                + "</ul>"
            )
        table = view.tables.get(machine)
        if table is not None:
            parts.append(_summary_table(table))
        parts.append(img(view.plots.get(machine), f"{view.id} on {machine}"))
    parts.append("</section>")
    return "\n".join(parts)


def _machines_table(runs: pd.DataFrame) -> str:
    head = (
        "<tr><th>machine</th><th>run</th><th>when</th><th>profile</th><th>CPU</th><th>GPU</th>"
        "<th>precision</th><th>host allocator</th></tr>"
    )
    body = []
    for r in runs.itertuples():
        info = r.machine_info or {}
        cpu = info.get("cpu_detail") or {}
        feats = ", ".join(k for k, v in (cpu.get("features") or {}).items() if v)
        precision = "; ".join(f"{k}={v}" for k, v in (info.get("precision") or {}).items())
        gpu = f"{r.gpu_name} ×{r.gpu_count}" if r.gpu_count else "none"
        run_name = f"{r.run} (partial)" if getattr(r, "partial", False) else r.run
        body.append(
            f"<tr><td>{esc(r.machine)}</td><td>{esc(run_name)}</td><td>{esc(r.datetime)}</td>"
            f"<td>{esc(r.profile)}</td><td>{esc(cpu.get('model'))} ({esc(cpu.get('usable_cores'))} cores; "
            f"{esc(feats)})</td><td>{esc(gpu)}</td><td class=meta>{esc(precision)}</td>"
            f"<td class=meta>{esc(allocator_state(info.get('allocator')))}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def allocator_state(state: dict | None) -> str:
    """The host allocator's state the CPU figures were timed in (harness/host/allocator.py), named:
    the same temporary cost 1.6 or 14.5 ms a call in two states (docs/measuring.md, "How it measures")."""
    if not state:
        return "not recorded"
    thp = f"; transparent huge pages: {state.get('transparent_hugepages', 'unknown')}"
    if not state.get("pinned"):
        why = state.get("why", "unknown why")
        return f"not pinned ({why}): a figure depends on what the process ran before{thp}"
    mib = state.get("mmap_threshold", 0) / 2**20
    return (
        f"{state.get('library', 'glibc')} thresholds pinned: blocks under {mib:g} MiB reused from a "
        f"heap never trimmed (a program whose heap has settled; a short default one can pay page "
        f"faults on its temporaries){thp}"
    )


VERDICT_ORDER = ("holds", "fails", "depends", "could not judge", "not measured")


def _trade(rule, claims) -> bool:
    """The case's timed claim is a memory trade (CATALOG.md, "Advice follows the claim's kind"):
    a rule node decides a memory claim and none decides a speed claim, as with checkpointing,
    which the notes sell for its memory and whose time is the price."""
    kinds = {c.id: c.kind for c in claims or ()}
    decided = {kinds.get(n.claim) for n in rules.claimed(rule)} if rule is not None else set()
    speed = any(
        kinds.get(r.claim) is record.ClaimKind.SPEED for r in rules.speed_rules(rule or rules.AllOf(()))
    )
    return record.ClaimKind.MEMORY in decided and not speed


def _premised(rule) -> str:
    """The premise the case's speed rules name (a reduced-precision kernel), or ""."""
    found = [getattr(r, "premise", "") for r in rules.speed_rules(rule or rules.AllOf(()))]
    found = [p for p in found if p]  # NotFaster names no premise
    return found[0] if found else ""


def _measured_over(pair: pd.DataFrame) -> str:
    """The sizes behind the advice and where the answer flips between them."""
    ordered = pair.sort_values("x", kind="stable")
    labels = list(dict.fromkeys(ordered["size_label"]))
    over = labels[0] if len(labels) == 1 else f"{labels[0]} … {labels[-1]} ({len(labels)} sizes)"
    gains = list(ordered["gain"]) if "gain" in ordered else []
    flips = [
        f"{b} from {ordered['x_name'].iloc[i] if 'x_name' in ordered else 'x'}={x:g}"
        for i, (a, b, x) in enumerate(zip(gains, gains[1:], list(ordered["x"])[1:]), 1)
        if a != b
    ]
    return over + ("; flips: " + ", ".join(flips) if flips else "; the same answer at every size")


def recommendation(rows: pd.DataFrame, rule=None, claims=()) -> tuple[str, str, str, str, str] | None:
    """(what to use, gain [CI], memory, how sure, measured over) from a case's timed claim: its rule
    pair (a pair the catalogue adds for context is never advice) at its largest size, with the
    sizes it was measured over and where the winner flips. A speed claim names the faster side
    where the gain is real, either where there is no measurable difference, and no advice where
    the machine could not tell; a memory trade names the memory saved and the time paid; two
    sides that ran one computation here (bitwise-identical results where the claim needs a
    premise, e.g. TF32 on a machine without it) give no advice."""
    if rows is None or rows.empty:
        return None
    pairs = rows[rows["against"] == "rule"]
    if pairs.empty:
        return None
    # The case's own comparison before its parts; among its pairs at their largest size, the one
    # with the fastest way.
    pairs = pairs.assign(_own=pairs["part"].fillna("").eq("")).sort_values(["_own", "x"], kind="stable")
    pairs = pairs[pairs["_own"] == pairs["_own"].max()]
    last = pairs.groupby(["fast", "slow", "device", "dtype"], sort=False).tail(1)
    row = last.sort_values("speedup", kind="stable").iloc[-1]
    over = _measured_over(
        pairs[
            (pairs["fast"] == row.fast)
            & (pairs["slow"] == row.slow)
            & (pairs["device"] == row.device)
            & (pairs["dtype"] == row["dtype"])
        ]
    )
    where = f"{row['size_label']} {row['dtype']} {row['device']}; measured over {over}"
    verdict = getattr(row, "gain", "")
    flip = verdict == "slower"  # the slow side is the one to use: its speed-up over the other
    lo, hi, point = (
        (1 / row.ci_high, 1 / row.ci_low, 1 / row.speedup) if flip else (row.ci_low, row.ci_high, row.speedup)
    )
    ci = f" [{fmt(lo)}, {fmt(hi)}]" if math.isfinite(lo) and math.isfinite(hi) else ""
    gain = f"{fmt(point)}×{ci}"
    quality = str(row.get("quality", "") or "")
    ratio = row["memory_ratio"]
    premise = _premised(rule)
    if premise and str(row.get("identical")) == "True":  # a bool, or NaN where not compared
        use = (
            f"no advice: {row.fast} and {row.slow} ran one computation here (bitwise-identical "
            f"results: {premise} is absent on this machine)"
        )
    elif _trade(rule, claims):
        # Memory is what the claim promises: the light side's saving, and the time it costs.
        light_saves = 1 / ratio if math.isfinite(ratio) and ratio > 0 else math.nan
        saved = (
            f"{fmt(light_saves)}× less peak memory"
            if math.isfinite(light_saves)
            else "peak memory not measured"
        )
        paid = f"{fmt(1 / row.speedup)}× the time" if math.isfinite(row.speedup) and row.speedup > 0 else ""
        use = f"{row.fast} where memory is short: {saved} than {row.slow}" + (f", at {paid}" if paid else "")
    elif "machine busy" in quality and verdict != "faster":
        # A pair timed busy that shows no clear gain cannot be judged (reports.verdicts): no
        # advice either, or the table would recommend what the technique column leaves undecided.
        use = f"no advice: {row.fast} vs {row.slow} timed on a busy machine ({fmt(row.speedup)}× here)"
    elif verdict == "faster":
        use = f"{row.fast} ({fmt(row.speedup)}× faster than {row.slow})"
    elif flip:
        use = f"{row.slow} ({fmt(1 / row.speedup)}× faster than {row.fast})"
    elif verdict == "no measurable difference":
        use = f"either: no measurable difference between {row.fast} and {row.slow}"
    else:
        use = f"no advice: too noisy to tell {row.fast} from {row.slow} here"
    if row.get("host_bound"):  # the rounds timed the host's pace: the GPU's own ratio beside it
        graph = row.get("graph_speedup", math.nan)
        use += f"; host-bound here, so not the GPU's figure (GPU only: {fmt(graph)}×)"
    if flip and math.isfinite(ratio) and ratio > 0:
        ratio = 1 / ratio  # memory of the way recommended
    if not math.isfinite(ratio) or abs(math.log(ratio)) < math.log(1.05):
        memory = "same" if math.isfinite(ratio) else ""
    else:
        memory = f"{fmt(ratio)}× less" if ratio > 1 else f"{fmt(1 / ratio)}× more"
    sure = quality or "paired rounds, quiet machine"
    return use, gain, memory, sure, where


def _answers(views: list[CaseView], machines: list[str]) -> str:
    """The user's question first: per machine, for each technique that compares two ways, which
    way to use here, by how much, how sure, and the two verdicts beside it."""
    out = []
    for machine in machines:
        body = []
        for v in views:
            j = v.judgements.get(machine)
            advice = recommendation(v.tables.get(machine), v.rules.get(machine), v.claims.get(machine, ()))
            if j is None or advice is None:
                continue
            use, gain, memory, sure, where = advice
            cls = ' class="warn"' if sure != "paired rounds, quiet machine" else ""
            body.append(
                f'<tr><td><a href="#{esc(v.id)}"><code>{esc(v.id)}</code></a></td><td>{esc(use)}</td>'
                f"<td>{esc(gain)}</td><td>{esc(memory)}</td><td{cls}>{esc(sure)}</td><td>{esc(where)}</td>"
                f"<td>{badge(j.verdict)}</td><td>{notes_badge(j.notes_verdict)}</td></tr>"
            )
        if body:
            out.append(
                f"<h3>What to use on {esc(machine)}</h3><table><tr><th>technique</th><th>use here</th>"
                "<th>speed-up [95% CI]</th><th>memory</th><th>how sure</th><th>measured at; over</th>"
                "<th>technique</th><th>notes</th></tr>" + "".join(body) + "</table>"
            )
    return "".join(out)


def _headline(views: list[CaseView], machines: list[str], runs: pd.DataFrame) -> str:
    """Per machine, one verdict per catalogue ID (an ID absent from the machine's results counts as
    not measured, so the counts add up to the catalogue), and the failed tests counted apart."""
    lines = []
    for machine in machines:
        verdicts = [
            v.judgements[machine].verdict if machine in v.judgements else "not measured" for v in views
        ]
        counts = ", ".join(f"{verdicts.count(k)} {k}" for k in VERDICT_ORDER)
        with_errata = sum(1 for v in views if machine in v.judgements and v.judgements[machine].errata)
        counts += f"; notes: {with_errata} with errata"
        errors = [(v.id, e) for v in views if machine in v.judgements for e in v.judgements[machine].errors]
        failed = (
            f"; <b class=errors>{len(errors)} failed test(s) in {len({c for c, _ in errors})} case(s)</b>"
            if errors
            else "; no failed tests"
        )
        mine = runs[runs["machine"] == machine] if "machine" in runs else runs.iloc[:0]
        partial = mine[mine["partial"].fillna(False).astype(bool)] if "partial" in mine else mine.iloc[:0]
        cut = (
            "; <b>partial</b>: "
            + esc("; ".join(f"{r.run} ({r.partial_reason or 'cut short'})" for r in partial.itertuples()))
            if not partial.empty
            else ""
        )
        lines.append(f"<li>{esc(machine)}: technique {counts} (= {len(verdicts)} IDs){failed}{cut}</li>")
    return f'<ul class="headline">{"".join(lines)}</ul>'


def page(
    views: list[CaseView],
    unknown: list[CaseView],
    runs: pd.DataFrame,
    machines: list[str],
    overviews: dict,
    rooflines: dict,
    side_by_side: str = "",
) -> str:
    """The report page; `side_by_side` the matrix section (reports.matrix) where several machines
    or torch versions are in it."""
    toc = []
    for tier in (1, 2, 3):
        items = []
        for v in (v for v in views if v.tier == tier):
            badges = " ".join(
                badge(j.verdict) + " " + notes_badge(j.notes_verdict) for j in v.judgements.values()
            )
            badges = badges or badge("not measured")
            items.append(f'<li><a href="#{esc(v.id)}"><code>{esc(v.id)}</code></a> {badges}</li>')
        toc.append(f"<h3>Tier {tier}</h3><ul class=toc>{''.join(items)}</ul>")
    if unknown:
        toc.append(
            "<h3>Unknown cases</h3><ul class=toc>"
            + "".join(f'<li><a href="#{esc(v.id)}"><code>{esc(v.id)}</code></a></li>' for v in unknown)
            + "</ul>"
        )
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src '
        "'unsafe-inline'\">",
        "<title>Technique suite report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>PyTorch technique suite: report</h1>",
        f"<p>{len(views)} catalogue IDs. Speed-ups are within one machine (runs pooled): the median of "
        "the ratios of rounds timed side by side, with its 95% interval; comparisons flagged "
        "<i>unpaired</i> were timed apart.</p>",
        LEGEND,
        _headline(views, machines, runs),
        _answers(views, machines),
        side_by_side,
        "<h2>Machines</h2>",
        _machines_table(runs),
        "<h2>Contents</h2>",
        *toc,
        "<h2>Overview</h2>",
    ]
    for machine in machines:
        body.append(
            f"<h4>{esc(machine)}</h4>"
            + img(overviews.get(machine), f"speedups on {machine}")
            + img(rooflines.get(machine), f"roofline on {machine}")
        )
    body.append("<h2>Techniques</h2>")
    body.extend(_section(v, machines, "case") for v in views)
    if unknown:
        body.append("<h2>Unknown cases</h2><p>In the results but not declared by the code any more.</p>")
        body.extend(_section(v, machines, "unknown") for v in unknown)
    body.append("</body></html>")
    return "\n".join(body)


@dataclass
class HistoryView:
    """One catalogue ID's history on one machine key (reports.history.report)."""

    id: str
    machine: str
    runs: int
    plot: bytes | None
    changes: list = field(
        default_factory=list
    )  # (run, commit, torch, size, where, pair, before, after, change)
    verdicts: list = field(default_factory=list)  # (run, commit, torch, claim, before, after)


def history_section(views: list[HistoryView], source: str) -> str:
    """The History part of the page: per ID and machine key, the speed-up over runs (one line per
    size, change points marked) and the verdict changes between runs, each with commit and torch."""
    if not views:
        return ""
    out = [
        "<h2 id=history>History</h2>",
        f"<p class=meta>From {esc(source)}: every run kept, oldest first. Dashed lines mark the change "
        "points found in a pair's speed-up (reports.history.changes); verdict changes are listed with "
        "the run, commit and torch that first showed them.</p>",
    ]
    for v in views:
        rows = "".join(
            f"<tr><td>{esc(run)}</td><td><code>{esc(commit[:10])}</code></td><td>{esc(torch)}</td><td>{esc(size)}</td>"
            f"<td>{esc(where)}</td><td>{esc(pair)}</td><td>{esc(before)}</td><td>{esc(after)}</td>"
            f"<td>{esc(fmt(change, '+.1%'))}</td></tr>"
            for run, commit, torch, size, where, pair, before, after, change in v.changes
        )
        changes = (
            "<table><tr><th>run</th><th>commit</th><th>torch</th><th>size</th><th>dtype device</th>"
            f"<th>pair</th><th>speed-up before</th><th>after</th><th>change</th></tr>{rows}</table>"
            if rows
            else "<p class=meta>No change point in its speed-ups.</p>"
        )
        verdict_rows = "".join(
            f"<tr><td>{esc(run)}</td><td><code>{esc(commit[:10])}</code></td><td>{esc(torch)}</td>"
            f"<td>{esc(claim or '(technique)')}</td><td>{badge(before)}</td><td>{badge(after)}</td></tr>"
            for run, commit, torch, claim, before, after in v.verdicts
        )
        verdicts = (
            "<table><tr><th>run</th><th>commit</th><th>torch</th><th>claim</th><th>verdict before</th>"
            f"<th>after</th></tr>{verdict_rows}</table>"
            if verdict_rows
            else "<p class=meta>The verdicts did not change between runs.</p>"
        )
        out.append(
            f'<section class="history" id="history-{esc(v.id)}"><h3><code>{esc(v.id)}</code> — '
            f"{esc(v.machine)}, {v.runs} runs</h3>{img(v.plot, f'{v.id} speed-up over runs on {v.machine}')}"
            f"<h4>Change points</h4>{changes}<h4>Verdict changes</h4>{verdicts}</section>"
        )
    return "\n".join(out)
