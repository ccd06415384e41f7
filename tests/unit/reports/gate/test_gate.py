"""The regression gate: every exit code, every bad input, and its statistics (A/A false alarms
from real per-round data, detection of injected slowdowns)."""

from __future__ import annotations

from tests import synthetic
from tests.gate_cli import run_gate
from tests.synthetic import pooled, write


def test_absolute_flags_a_uniform_slowdown_that_speedups_hide(tmp_path, capsys):
    b = pooled(tmp_path, "b", [synthetic.result(seed=s) for s in (1, 3, 4)])
    everything = {name: 1.5 for name, _, _ in synthetic.VARIANTS}
    c = write(tmp_path / "c.json", synthetic.result(seed=2, slow=everything))
    assert run_gate(capsys, "--baseline", b, "--current", c)[0] == 0
    code, out, _ = run_gate(capsys, "--baseline", b, "--current", c, "--absolute")
    assert code == 1
    assert "slower (absolute)" in out


# Fail closed (issue: the gate passed what it could not judge) ---------------------------------


def test_a_planted_slowdown_fails_against_a_pooled_paired_baseline(tmp_path, capsys):
    """Two baseline runs from processes whose absolute speed differs 1.6× (the bimodality the
    docs warn of: docs/gate.md): pooled raw times are bimodal and were never judged ("unstable"); paired
    ratios are not, so a 30% slowdown of the fast variant fails, and an unchanged run passes."""
    fast_run = synthetic.result(seed=1, paired=True, n_rounds=60)
    slow_run = synthetic.result(seed=2, paired=True, n_rounds=60, slow={"naive_v": 1.6, "fast_v": 1.6})
    base = pooled(tmp_path, "base", [fast_run, slow_run])
    regressed = write(
        tmp_path / "c.json", synthetic.result(seed=3, paired=True, n_rounds=60, slow={"fast_v": 1.3})
    )
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", regressed)
    assert code == 1 and "**regressed**" in out
    same = write(tmp_path / "same.json", synthetic.result(seed=4, paired=True, n_rounds=60))
    assert run_gate(capsys, "--baseline", base, "--current", same)[0] == 0


def test_an_unstable_pair_with_no_stable_recheck_is_not_passed(tmp_path, capsys):
    base = pooled(tmp_path, "b", [synthetic.result(seed=s) for s in (1, 5)])
    noisy = synthetic.result(seed=2, sigma=0.6, n_rounds=40, slow={"fast_v": 1.3})
    cur = write(tmp_path / "c.json", noisy)
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", cur)
    assert code == 3 and "COULD NOT JUDGE" in out and "unstable" in out
    again = write(tmp_path / "r.json", synthetic.result(seed=3, sigma=0.6, n_rounds=40, slow={"fast_v": 1.3}))
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", cur, "--recheck", again)
    assert code == 3 and "could not judge" in out
    assert (
        run_gate(capsys, "--baseline", base, "--current", cur, "--recheck", again, "--allow-unjudged")[0] == 0
    )
    # A stable re-measurement judges it: the slowdown is real.
    steady = write(tmp_path / "s.json", synthetic.result(seed=4, slow={"fast_v": 1.3}))
    assert run_gate(capsys, "--baseline", base, "--current", cur, "--recheck", steady)[0] == 1


def test_a_drop_timed_on_a_busy_machine_is_re_measured_not_failed(tmp_path, capsys):
    """A busy current run decides nothing (exit 3); a quiet recheck then decides."""
    base = pooled(tmp_path, "base", [synthetic.result(seed=s, paired=True, n_rounds=60) for s in (1, 2)])
    busy = write(
        tmp_path / "busy.json",
        synthetic.result(
            seed=3, paired=True, n_rounds=60, slow={"fast_v": 1.5}, busy="load average 4 on 2 cores"
        ),
    )
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", busy)
    assert code == 3 and "timed only on a busy machine" in out
    quiet = write(
        tmp_path / "quiet.json", synthetic.result(seed=5, paired=True, n_rounds=60, slow={"fast_v": 1.5})
    )
    assert run_gate(capsys, "--baseline", base, "--current", busy, "--recheck", quiet)[0] == 1


def test_a_baseline_timed_only_on_a_busy_machine_never_passes_a_slowdown(tmp_path, capsys):
    """Every baseline run busy, its speed-up read low by the neighbours, and the current run quiet
    and 2.5× slower: the gate passed it ("+24.6% ok"); a busy run decides nothing, on either side."""
    busy = "load average 4 on 2 cores"
    base = pooled(
        tmp_path,
        "base",
        [synthetic.result(seed=s, paired=True, n_rounds=60, slow={"fast_v": 3.0}, busy=busy) for s in (1, 2)],
    )
    current = write(
        tmp_path / "cur.json", synthetic.result(seed=3, paired=True, n_rounds=60, slow={"fast_v": 2.5})
    )
    code, out, _ = run_gate(capsys, "--baseline", base, "--current", current)
    assert code == 3 and "baseline timed only on a busy machine" in out and "| ok |" not in out
