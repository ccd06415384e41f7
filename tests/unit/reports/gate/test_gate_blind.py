"""The gate never passes blind (issue 41): exit 0 means "judged, and held". Each way it once
passed a 3× slowdown or a comparison of nothing is reproduced here: rechecks from another machine
or commit, a baseline that judges nothing (pairs-only, one side only, everything skipped), a
field that turns the gate off, and one run counted as three."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.contract import record, rules
from reports.__main__ import main
from tests import synthetic
from tests.gate_cli import run_gate as gate
from tests.synthetic import pooled, write

SLOW_3X = {"fast_v": 3.0}  # the optimized way 3× slower: every gated pair drops by 67%


def baseline(tmp_path, n=3, **kw) -> Path:
    folder = tmp_path / "baseline"
    folder.mkdir()
    for i in range(n):
        write(folder / f"run{i}.json", synthetic.result(seed=10 + i, paired=True, **kw))
    return folder


def other_machine(doc: dict) -> dict:
    doc["machine_info"]["torch"] = {**doc["machine_info"]["torch"], "label": "Another CPU (2 cores)"}
    doc["machine_info"]["torch"]["cpu_detail"] = {"model": "Another CPU", "usable_cores": 2, "features": {}}
    return doc


# ---- 1. rechecks must re-measure the current run --------------------------------------------------


def test_a_3x_slowdown_is_not_rescued_by_rechecks_from_another_machine(tmp_path, capsys):
    b = baseline(tmp_path)
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True, slow=SLOW_3X))
    alone, out, _ = gate(capsys, "--baseline", b, "--current", c)
    assert alone == 1, out
    rechecks = [
        write(tmp_path / f"r{i}.json", other_machine(synthetic.result(seed=20 + i, paired=True)))
        for i in (1, 2)
    ]
    code, out, err = gate(
        capsys, "--baseline", b, "--current", c, "--recheck", rechecks[0], "--recheck", rechecks[1]
    )
    assert code == 2, out
    assert "a recheck from another machine" in err and "r1.json" in err


def test_a_recheck_of_another_commit_is_refused_by_name(tmp_path, capsys):
    b = baseline(tmp_path)
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True))
    other = synthetic.result(seed=2, paired=True)
    other["commit_info"] = {"id": "1" * 40}
    r = write(tmp_path / "r.json", other)
    code, _, err = gate(capsys, "--baseline", b, "--current", c, "--recheck", r)
    assert code == 2 and "a recheck of commit 1111" in err and "the current commit" in err


# ---- 2. judged nothing is never 0 -----------------------------------------------------------------


def pairs_only(doc: dict) -> dict:
    """A `-k "... and test_pair"` run: the pairs timed side by side, no solo benchmark rows."""
    return {**doc, "benchmarks": []}


def test_a_pairs_only_baseline_judges_nothing_and_says_so(tmp_path, capsys):
    folder = tmp_path / "b"
    folder.mkdir()
    for i in range(3):
        write(folder / f"run{i}.json", pairs_only(synthetic.result(seed=10 + i, paired=True)))
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True, slow=SLOW_3X))
    code, out, _ = gate(capsys, "--baseline", folder, "--current", c)
    assert code == 3, out
    assert "both runs timed this pair, but not as the gate compares it" in out
    assert "judged no pair" in out


def test_a_baseline_holding_one_side_only_judges_nothing(tmp_path, capsys):
    one_side = (("naive_v", "naive", 4.0),)
    b = baseline(tmp_path, variants=one_side)
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True, slow=SLOW_3X))
    code, out, _ = gate(capsys, "--baseline", b, "--current", c)
    assert code == 3 and "judged no pair" in out, out


def test_a_skipped_run_as_baseline_judges_nothing(tmp_path, capsys):
    """`--device cuda` on a CPU box: every test skipped, no benchmark, no pair."""
    doc = synthetic.result(seed=1)
    skipped = [{**o, "outcome": "skipped", "reason": "CUDA not available"} for o in doc["outcomes"]]
    b = write(tmp_path / "b.json", {**doc, "benchmarks": [], "outcomes": skipped})
    c = write(tmp_path / "c.json", synthetic.result(seed=2, paired=True, slow=SLOW_3X))
    code, out, _ = gate(capsys, "--baseline", b, "--current", c)
    assert code == 3 and "judged no pair" in out, out


# ---- 3. a field that turns the gate off is bad input ----------------------------------------------


def with_tolerance(value) -> dict:
    info = record.CaseInfo(id="distance.pairwise", tier=1, rule=rules.Faster(), gate_tolerance=0.1).to_data()
    info["gate_tolerance"] = value
    return synthetic.result(
        seed=1, paired=True, slow=SLOW_3X, schema_version=4, cases_info={"distance.pairwise": info}
    )


@pytest.mark.parametrize("value", [float("nan"), 1.0, 5, float("inf"), "0.1", -3, 0, True])
def test_a_gate_tolerance_outside_0_1_is_refused_naming_the_field(tmp_path, capsys, value):
    b = baseline(tmp_path)
    c = tmp_path / "c.json"
    c.write_text(json.dumps(with_tolerance(value)), encoding="utf-8")  # NaN and inf as JSON extensions
    code, _, err = gate(capsys, "--baseline", b, "--current", c)
    assert code == 2, err
    assert "c.json" in err and "gate_tolerance" in err


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1])
def test_a_noise_floor_that_is_not_finite_and_non_negative_is_refused(tmp_path, capsys, value):
    doc = synthetic.result(seed=1, paired=True)
    doc["pairs"][0]["noise_floor"] = value
    c = write(tmp_path / "c.json", doc)
    code, _, err = gate(capsys, "--baseline", baseline(tmp_path), "--current", c)
    assert code == 2 and "noise_floor" in err, err


@pytest.mark.parametrize("value", [float("nan"), -5])
def test_an_iqr_that_is_not_finite_and_non_negative_is_refused(tmp_path, capsys, value):
    doc = synthetic.result(seed=1, paired=True)
    doc["benchmarks"][0]["stats"]["iqr"] = value
    c = write(tmp_path / "c.json", doc)
    code, _, err = gate(capsys, "--baseline", baseline(tmp_path), "--current", c)
    assert code == 2 and "stats.iqr" in err, err


# ---- 4. one run is one run, however often it is reached ---------------------------------------------


def test_one_run_reached_three_times_counts_once(tmp_path, capsys):
    folder = tmp_path / "b"
    folder.mkdir()
    run0 = write(folder / "run0.json", synthetic.result(seed=10, paired=True))
    os.symlink(run0, folder / "latest.json")
    shutil.copy(run0, folder / "copy.json")
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True, slow={"fast_v": 1.2}))
    code_folder, out_folder, _ = gate(capsys, "--baseline", folder, "--current", c)
    code_once, out_once, _ = gate(capsys, "--baseline", run0, "--current", c)
    assert "Counted once:" in out_folder and "copy.json" in out_folder and "latest.json" in out_folder
    table = lambda text: [line for line in text.splitlines() if line.startswith("| distance")]  # noqa: E731
    assert (code_folder, table(out_folder)) == (code_once, table(out_once))


# ---- the property: exit 0 only when every pair both runs timed was judged ----------------------------


def test_exit_0_only_when_every_pair_both_runs_hold_was_judged(tmp_path, capsys):
    """Generated baseline/current combinations: sides missing, pairs-only runs, skipped runs,
    duplicated runs, rechecks from this machine or another. Whatever the mix, a pass judged every
    pair both runs timed."""
    rng = np.random.default_rng(0)
    variants = synthetic.VARIANTS
    for trial in range(16):
        folder = tmp_path / f"b{trial}"
        folder.mkdir()
        kinds = rng.choice(["full", "pairs_only", "one_side", "skipped", "duplicate"], size=2)
        for i, kind in enumerate(kinds):
            doc = synthetic.result(seed=100 * trial + i, paired=True)
            if kind == "pairs_only":
                doc = pairs_only(doc)
            elif kind == "one_side":
                doc = synthetic.result(seed=100 * trial + i, variants=variants[:1])
            elif kind == "skipped":
                doc = {**doc, "benchmarks": [], "pairs": []}
            write(folder / f"run{i}.json", doc)
            if kind == "duplicate":
                shutil.copy(folder / f"run{i}.json", folder / f"dup{i}.json")
        slow = {"fast_v": float(rng.choice([1.0, 3.0]))}
        c = write(tmp_path / f"c{trial}.json", synthetic.result(seed=7 + trial, paired=True, slow=slow))
        recheck = str(rng.choice(["none", "same machine", "another machine"]))
        args = []
        if recheck != "none":
            doc = synthetic.result(seed=50 + trial, paired=True, slow=slow)
            args = [
                "--recheck",
                write(tmp_path / f"r{trial}.json", doc if recheck == "same machine" else other_machine(doc)),
            ]
        code, out, _ = gate(capsys, "--baseline", folder, "--current", c, *args)
        if recheck == "another machine":
            assert code == 2, (list(kinds), out)
        if code == 0:
            rows = [line for line in out.splitlines() if line.startswith("| distance")]
            assert rows and all("| ok" in row for row in rows), (list(kinds), out)
        if slow["fast_v"] == 3.0:
            assert code != 0, (list(kinds), out)


def test_an_unwritable_step_summary_keeps_the_table_and_the_exit_code(tmp_path, capsys, monkeypatch):
    b = baseline(tmp_path)
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True, slow=SLOW_3X))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a folder: open() fails
    code, out, err = gate(capsys, "--baseline", b, "--current", c)
    assert code == 1 and "**regressed**" in out
    assert "GITHUB_STEP_SUMMARY" in err and "not written" in err


def test_a_pair_whose_side_has_no_rows_in_the_baseline_is_not_passed_silently(tmp_path, capsys):
    """The baseline timed fast_v beside naive_v (pairs[]) but kept no solo row of fast_v (a -k
    selection): the gate falls back to the library pair, and the rule's pair, which both runs
    timed, must not vanish into an exit 0."""
    doc = synthetic.result(seed=10, paired=True)
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["extra_info"]["variant"] != "fast_v"]
    b = write(tmp_path / "b.json", doc)
    c = write(tmp_path / "c.json", synthetic.result(seed=1, paired=True, slow=SLOW_3X))
    code, out, _ = gate(capsys, "--baseline", b, "--current", c)
    assert code == 3, out
    assert "| fast_v ÷ naive_v |" in out and "both runs timed this pair" in out


@pytest.mark.parametrize(
    "spoil, field",
    [
        (lambda d: d.update(commit_info="abc"), "commit_info is not an object"),
        (lambda d: d["pairs"][0].update(load="busy"), "load is 'busy', not an object"),
        (lambda d: d["pairs"][0].update(fast_s=[], slow_s=[]), "fast_s is an empty list"),
    ],
)
def test_wrong_typed_fields_are_bad_input_naming_the_field(tmp_path, capsys, spoil, field):
    doc = synthetic.result(seed=1, paired=True)
    spoil(doc)
    c = write(tmp_path / "c.json", doc)
    code, _, err = gate(capsys, "--baseline", baseline(tmp_path), "--current", c)
    assert code == 2 and "c.json" in err and field in err, err


def test_a_corrupt_deflate_body_and_a_200000_deep_document_are_bad_input(tmp_path, capsys):
    (tmp_path / "z.json.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 10)
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    b = baseline(tmp_path)
    for bad in ("z.json.gz", "deep.json"):
        code, _, err = gate(capsys, "--baseline", b, "--current", tmp_path / bad)
        assert code == 2 and bad in err, err


def test_a_pair_naming_a_variant_the_benchmarks_lack_is_judged_or_named_never_a_crash(tmp_path, capsys):
    """A pair whose side has no benchmark row (a `-k test_pair` selection writes such pairs) once
    ended the gate and the report with exit 4 and an exception name."""
    folder = baseline(tmp_path)
    current = synthetic.result(seed=20, paired=True)
    current["pairs"][0]["fast"] = "a_variant_with_no_rows"
    path = write(tmp_path / "current.json", current)
    code, out, err = gate(capsys, "--baseline", folder, "--current", path)
    assert code in (0, 3) and "Traceback" not in out + err and "Error" not in err, out + err
    assert main(["build", str(path), "--out", str(tmp_path / "report")]) == 0


# ---- 4. what the current run declares cannot loosen its own gate -----------------------------------


def _declared(tolerance=0.1, timed=None) -> dict:
    info = record.CaseInfo(
        id="distance.pairwise", tier=1, rule=rules.Faster(), gate_tolerance=tolerance
    ).to_data()
    if timed is not None:
        info["timed"] = timed
    return {"distance.pairwise": info}


def test_a_tolerance_the_current_run_declares_cannot_pass_its_slowdown(tmp_path, capsys):
    """The current run declared gate_tolerance 0.99 and a 3× slowdown read "ok" with no note."""
    b = pooled(
        tmp_path,
        "b",
        [synthetic.result(seed=s, paired=True, schema_version=4, cases_info=_declared()) for s in (1, 3, 4)],
    )
    c = write(
        tmp_path / "c.json",
        synthetic.result(seed=2, paired=True, slow=SLOW_3X, schema_version=4, cases_info=_declared(0.99)),
    )
    code, out, _ = gate(capsys, "--baseline", b, "--current", c)
    assert code == 1 and "declares gate tolerance 0.99" in out, out


def test_a_current_run_mixing_commits_is_refused(tmp_path, capsys):
    """--current given a folder of two commits' runs passed a 3× slowdown (the older run stood in)."""
    b = baseline(tmp_path)
    folder = tmp_path / "cur"
    folder.mkdir()
    write(folder / "old.json", synthetic.result(seed=2, paired=True))
    new = synthetic.result(seed=3, paired=True, slow=SLOW_3X)
    new["commit_info"]["id"] = "1" * 40
    write(folder / "new.json", new)
    code, _, err = gate(capsys, "--baseline", b, "--current", folder)
    assert code == 2 and "commits" in err


def test_a_current_run_without_peak_memory_says_memory_was_not_checked(tmp_path, capsys):
    b = baseline(tmp_path)
    c = write(tmp_path / "c.json", synthetic.result(seed=2, paired=True, peak=False))
    code, out, _ = gate(capsys, "--baseline", b, "--current", c)
    assert "memory not checked" in out, out
