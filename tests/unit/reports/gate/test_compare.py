"""The declared pairs of two sides judged into lines (reports/gate/compare.py): a case's own tolerance,
rechecks joining the current side and only for the pairs they hold, a case judged by its findings gated
on the pair it times, baseline runs that differ (never a wider tolerance), a variant that allocates
nothing."""

from __future__ import annotations

import numpy as np

from harness.contract import record, rules
from reports import gate, load
from tests import synthetic
from tests.gate_cli import run_gate
from tests.synthetic import pooled, write


def test_a_variant_that_allocates_nothing_is_compared_not_crashed(tmp_path, capsys):
    docs = [synthetic.result(seed=seed) for seed in (1, 3, 4, 2)]
    for doc in docs:
        for bench in doc["benchmarks"]:
            if bench["extra_info"]["variant"] == "fast_v":
                bench["extra_info"]["peak_bytes"] = 0.0  # in place, or a view: the allocator sees nothing
    base = pooled(tmp_path, "b", docs[:3])
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", write(tmp_path / "c.json", docs[3]))
    assert code == 0, out


def test_case_tolerance_overrides_the_default(tmp_path):
    b = load.load([pooled(tmp_path, "b", [synthetic.result(seed=1), synthetic.result(seed=3)])])
    c = load.load([write(tmp_path / "c.json", synthetic.result(seed=2, slow={"fast_v": 1.3}))])
    assert gate.exit_code(gate.compare(b, c, tolerance=0.10)) == 1
    # The same runs, the case declaring a tolerance of its own (as its runs record it).
    noisy = {
        "distance.pairwise": record.CaseInfo("distance.pairwise", 1, rule=rules.Faster(), gate_tolerance=0.5)
    }
    declared = dict(
        schema_version=record.SCHEMA_VERSION, cases_info={k: v.to_data() for k, v in noisy.items()}
    )
    docs = [synthetic.result(seed=s, **declared) for s in (1, 3)]
    b = load.load([pooled(tmp_path, "b_noisy", docs)])
    c = load.load(
        [write(tmp_path / "c_noisy.json", synthetic.result(seed=2, slow={"fast_v": 1.3}, **declared))]
    )
    assert gate.exit_code(gate.compare(b, c, tolerance=0.10)) == 0


def test_rechecks_join_the_current_side(tmp_path, capsys):
    """Rechecks are more runs of the current code: a drop that one of two rechecks does not show
    leaves runs that disagree (σ and the interval widen; the tolerance never does), one that
    persists in the recheck fails."""
    b = pooled(tmp_path, "b", [synthetic.result(seed=s) for s in (1, 5)])
    c = write(tmp_path / "c.json", synthetic.result(seed=2, slow={"fast_v": 1.5}))
    fine = write(tmp_path / "fine.json", synthetic.result(seed=3))
    slow = write(tmp_path / "slow.json", synthetic.result(seed=4, slow={"fast_v": 1.5}))
    suspects = tmp_path / "suspects.txt"
    code, _, _ = run_gate(capsys, "--baseline", b, "--current", c, "--suspects", suspects)
    assert code == 1
    assert (
        suspects.read_text().strip()
        == "(distance.pairwise and n128) or (distance.pairwise and n256) or (distance.pairwise and n512)"
    )
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c, "--recheck", fine, "--recheck", slow)
    # The mean drop of the three (~22%) lies beyond the tolerance, and the runs disagree: the
    # interval cannot place it either side, so it is neither a pass nor a regression.
    assert code == 3 and "3 current runs" in out and "**regressed**" not in out, out
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c, "--recheck", slow)
    assert code == 1 and "2 current runs" in out and "**regressed**" in out


def test_a_case_judged_by_its_findings_is_gated_on_the_pair_it_times(tmp_path, capsys):
    """layernorm.manual times F.layer_norm (library) against the notes' way and is judged by its
    findings: a 2× slowdown of the library variant showed no line at all."""
    variants = (("manual", "naive", 4.0), ("layer_norm", "library", 1.0))
    info = {"layernorm.manual": record.CaseInfo("layernorm.manual", 2, rule=rules.FromFindings()).to_data()}
    kw = dict(cases=("layernorm.manual",), variants=variants, cases_info=info, schema_version=3, paired=True)
    base = pooled(tmp_path, "b", [synthetic.result(seed=s, **kw) for s in (1, 3)])
    cur = write(tmp_path / "c.json", synthetic.result(seed=2, slow={"layer_norm": 2.0}, **kw))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", cur)
    assert code == 1 and "layer_norm ÷ manual" in out


def test_a_pair_whose_unchanged_baseline_runs_differ_is_not_passed_on_its_noise(tmp_path, capsys):
    """A pooled baseline whose two unchanged runs put a pair's speed-up 40% apart (a temporary
    page-faulted in one process and not in the other): its interval is wider than the tolerance,
    so an unchanged current run at the low end is not passed but could not be judged, the line
    naming the drop a pass would have hidden and the σ behind it; a drop far beyond the runs' own
    spread fails. (The gate once widened such a pair's tolerance by its noise, to 33%, and passed
    that run: a pair's own noise made its pass.)"""
    high = synthetic.result(seed=1, paired=True, n_rounds=60)
    low = synthetic.result(seed=2, paired=True, n_rounds=60, slow={"fast_v": 1.4})
    base = pooled(tmp_path, "base", [high, low])

    def gate_at(name, slow, rechecks=0):
        runs = [
            write(
                tmp_path / f"{i}{name}",
                synthetic.result(seed=3 + i, paired=True, n_rounds=60, slow={"fast_v": slow}),
            )
            for i in range(1 + rechecks)
        ]
        again = [arg for path in runs[1:] for arg in ("--recheck", path)]
        return run_gate(capsys, "--baseline", base, "--current", runs[0], *again)[:2]

    code, out = gate_at("same_as_low.json", 1.4)
    assert code == 3 and "**regressed**" not in out, out
    assert "cannot be ruled out at tolerance 10%" in out and "this pair's runs vary by σ" in out, out
    # A 6× drop against two runs: on 1 df of its own the pair's σ is barely known, and the failing
    # bound (99.9%) lies above the tolerance; the workflow's two rechecks confirm it.
    assert gate_at("far.json", 6.0)[0] == 3
    code, out = gate_at("far.json", 6.0, rechecks=2)
    assert code == 1 and "**regressed**" in out, out


def test_a_recheck_lacking_a_pair_does_not_count_for_it(tmp_path):
    """A recheck re-measures only the suspects it was asked for: it counts as a current run of
    the pairs it holds (n128 here) and for no other (n256, n512 are judged on the current run
    alone, exactly as without it)."""
    base = load.load([pooled(tmp_path, "b", [synthetic.result(seed=s, paired=True) for s in (1, 2, 3)])])
    cur = load.load([write(tmp_path / "c.json", synthetic.result(seed=4, paired=True, slow={"fast_v": 1.5}))])
    recheck = load.load([write(tmp_path / "r.json", synthetic.result(seed=5, paired=True, sizes=(128,)))])
    alone = {(line.size, line.pair): line for line in gate.compare(base, cur)}
    both = {(line.size, line.pair): line for line in gate.compare(base, cur, rechecks=(recheck,))}
    for size in ("n256", "n512"):
        line = both[size, "fast_v ÷ naive_v"]
        assert line.verdict == gate.REGRESSED and "current runs" not in line.note
        assert (line.change, line.ci) == (
            alone[size, "fast_v ÷ naive_v"].change,
            alone[size, "fast_v ÷ naive_v"].ci,
        )
    rechecked = both["n128", "fast_v ÷ naive_v"]
    assert "2 current runs" in rechecked.note
    assert (
        rechecked.change > alone["n128", "fast_v ÷ naive_v"].change
    )  # the unchanged recheck halves the drop


def test_each_timing_mode_is_gated_on_its_own_rounds(tmp_path):
    """`--timing-mode all` times each point warm, cold-L2 and as a graph: three samples the gate
    keys apart (the mode joins the device in a line), never pooled. The fast variant made 2×
    slower in its cold-L2 rounds alone regresses the cold-L2 line and no other; pooled with the
    warm rounds (the keys once dropped the mode) the slowdown was diluted or lost."""

    def run(seed: int, cold_fast: float) -> dict:
        doc = synthetic.with_timing_modes(
            synthetic.result(seed=seed, n_rounds=30, sigma=0.02), {"cold_l2": 3.0}
        )
        for bench in doc["benchmarks"]:
            info = bench["extra_info"]
            if info.get("timing_mode") == "cold_l2" and info["variant"] == "fast_v":
                bench["stats"] = synthetic._stats(np.asarray(bench["stats"]["data"]) * cold_fast)
        return doc

    base = load.load([pooled(tmp_path, "base", [run(1, 1.0), run(2, 1.0), run(3, 1.0)])])
    cur = load.load([write(tmp_path / "cur.json", run(4, 2.0))])
    lines = [x for x in gate.compare(base, cur) if x.pair.startswith("fast_v ÷")]
    by_where = {}
    for x in lines:
        by_where.setdefault(x.where.split(" ", 1)[1], set()).add(x.verdict)
    assert set(by_where) == {"cpu", "cpu cold_l2"}, by_where
    assert by_where["cpu cold_l2"] == {gate.REGRESSED}, lines
    assert gate.REGRESSED not in by_where["cpu"], lines
