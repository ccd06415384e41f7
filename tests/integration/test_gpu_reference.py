""".ci/gpu-reference in one short offline slot, with a fake `python3` and `nvidia-smi` first on a PATH
that has no `python` at all (as on the lending machine, where the venv's interpreter is python3):
each step is cut at its limit (and killed where it ignores the interrupt), the steps after it still
run, finished steps' files come back, no lock file is left, at most 7 files are in the output
folder, and the whole plan, grace included, fits the 540 s of one device call. The fakes stand
in for a GPU machine's hangs: `nvidia-smi` that never answers, a pytest whose main thread is stuck
in a C call (SIGINT ignored), a worker started in a session of its own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import paths

ROOT = paths.ROOT
SCRIPT = ROOT / ".ci" / "gpu-reference"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not all(shutil.which(tool) for tool in ("bash", "timeout", "setsid", "gzip")),
        reason="needs bash, timeout, setsid and gzip",
    ),
]

# `FAKE_<STEP>` picks a step's behaviour (the step is the one the script names in the environment
# of what it starts, GPU_REFERENCE_STEP=<step>@<its pid>): ok (its files: a pytest step's results
# and a lock file as a killed run leaves one, the probe's JSON), hang (until interrupted), deaf
# (SIGINT ignored: only a kill ends it; a pytest step first writes a journal and a lock, and
# starts an orphan in a session of its own).
FAKE_PYTHON = r"""#!/usr/bin/env bash
results= out= json= prev=
for a in "$@"; do
    case $prev in --results) results=$a ;; --out) out=$a ;; --json) json=$a ;; esac
    prev=$a
done
if [ "$2" = harness.run.journal ]; then
    sleep "${FAKE_REBUILD_S:-0}"
    echo '{"rebuilt from": "'"$3"'"}' >"$out"
    exit 0
elif [ "$2" = plan.headline ]; then
    echo "(fake and headline)"
    exit 0
fi
step=${GPU_REFERENCE_STEP%@*}  # the step, tagged with the script's pid
var=FAKE_${step^^}
case ${!var:-ok} in
nocuda)
    echo "torch 9.9 (fake, no CUDA)"; echo "NO CUDA: torch.cuda.is_available() is False"; exit 3 ;;
ok)
    case $step in
    env) echo "torch 9.9 (fake)" ;;
    probe) echo '{"rows": []}' >"$json"; echo "probe table (fake)" ;;
    summary) echo "summary table (fake)" ;;
    *)
        if [ -n "$results" ]; then
            echo '{"benchmarks": [], "step": "'"$step"'"}' >"$results"
            : >"$results.lock"
        fi
        echo "1 passed (fake $step)" ;;
    esac ;;
hang)
    echo "torch 9.9 (fake, hanging)"
    exec sleep 1000 ;;
deaf)
    echo "torch 9.9 (fake, deaf)"
    if [ -n "$results" ]; then
        : >"$results.lock"
        echo '{"kind": "header"}' >"$results.journal.jsonl"
    fi
    if [ -n "${FAKE_ORPHAN_PIDFILE:-}" ]; then
        setsid sleep 1000 >/dev/null 2>&1 &
        echo $! >"$FAKE_ORPHAN_PIDFILE"
    fi
    trap '' INT
    sleep 1000 ;;
esac
"""

FAKE_NVIDIA_SMI = r"""#!/usr/bin/env bash
if [ "${FAKE_NVIDIA_SMI:-ok}" = deaf ]; then trap '' INT; sleep 1000; fi
echo "GPU 0: Fake H100 (UUID: GPU-0)"
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie nobody reaped has already stopped


def _run(
    tmp_path: Path, steps: list[str], timeout_s: float, **fake
) -> tuple[subprocess.CompletedProcess, float]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("python3", FAKE_PYTHON), ("nvidia-smi", FAKE_NVIDIA_SMI)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    # No `python` on PATH: only the fakes and the system's tools (no pyenv or venv folder).
    system = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "python").exists()]
    env = {
        **{k: v for k, v in os.environ.items() if k != "PY"},
        "PATH": os.pathsep.join([str(bin_dir), *system]),
        "GPU_REFERENCE_GRACE": "1",
        **fake,
    }
    start = time.monotonic()
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), str(tmp_path / "out"), *steps],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"the script ran past {timeout_s} s: a step is not bounded\n{output[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, output, ""), time.monotonic() - start


def _files(out: Path) -> set[str]:
    return {p.name for p in out.iterdir()}


DEFAULT = [
    "run.log",
    "probe.json",
    "tests.log",
    "headline.log",
    "headline.json.gz",
    "quick.log",
    "quick.json.gz",
]
SHORT = ["env:2", "probe:2", "tests:2", "headline:3", "quick:3", "summary:2"]
OWN = {  # each step's own files (env and summary write to run.log alone)
    "env": set(),
    "probe": {"probe.json"},
    "tests": {"tests.log"},
    "headline": {"headline.log", "headline.json.gz"},
    "quick": {"quick.log", "quick.json.gz"},
    "summary": set(),
}


def test_each_step_is_cut_at_its_limit_and_the_others_still_run(tmp_path):
    pidfile = tmp_path / "orphan.pid"
    try:
        result, wall = _run(
            tmp_path,
            ["env:2", "probe:2", "headline:2", "quick:5", "tests:2", "summary:2"],
            timeout_s=60,
            FAKE_NVIDIA_SMI="deaf",
            FAKE_HEADLINE="deaf",
            FAKE_ORPHAN_PIDFILE=str(pidfile),
            FAKE_TESTS="hang",
        )
        orphan = int(pidfile.read_text()) if pidfile.exists() else None
        assert not (orphan and _alive(orphan)), "a process started by the killed step outlived it"
    finally:
        if pidfile.exists() and _alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    out = tmp_path / "out"
    log = (out / "run.log").read_text()
    assert result.returncode == 0, result.stdout[-3000:]
    # 2 + 1 s (env, killed), 2 + 1 s (headline, killed), 2 s (tests, interrupted) and the fakes' starts.
    assert wall < 25, f"{wall:.1f} s\n{result.stdout[-3000:]}"
    assert "torch 9.9" in log  # what env printed before nvidia-smi hung is kept
    assert "== env: exit 137 (killed 1 s after its limit)" in log
    assert "== headline: exit 137 (killed 1 s after its limit)" in log
    assert "== quick: exit 0," in log and "== probe: exit 0," in log
    assert "== summary: exit 137 (killed 1 s after its limit)" in log  # its nvidia-smi hung too
    assert "== tests: exit 124 (interrupted at its limit)" in log
    assert "probe table (fake)" in log and "summary table (fake)" in log  # the table in the call's tail
    files = _files(out)
    assert not [f for f in files if f.endswith(".lock") or f.endswith(".tmp")], files
    assert {
        "quick.json.gz",
        "quick.log",
        "headline.json.gz",
        "headline.log",
        "tests.log",
        "probe.json",
    } <= files
    assert not [f for f in files if "journal" in f], files  # rebuilt into headline.json
    assert len(files) <= 7, files


@pytest.mark.parametrize("step", list(OWN))
def test_a_hang_in_any_step_returns_the_other_steps_files_and_at_most_seven(tmp_path, step):
    result, wall = _run(tmp_path, SHORT, timeout_s=60, **{f"FAKE_{step.upper()}": "hang"})
    assert result.returncode == 0 and wall < 25, result.stdout[-3000:]
    files = _files(tmp_path / "out")
    others = set().union(*(own for name, own in OWN.items() if name != step)) | {"run.log"}
    assert others <= files and len(files) <= 7, files
    assert f"== {step}: exit 124 (interrupted at its limit)" in (tmp_path / "out" / "run.log").read_text()


def test_the_default_plan_leaves_seven_files_and_fits_one_device_call(tmp_path):
    result, _ = _run(tmp_path, [], timeout_s=60)
    out = tmp_path / "out"
    assert result.returncode == 0, result.stdout[-3000:]
    log = (out / "run.log").read_text()
    assert "GPU 0: Fake H100" in log and "torch 9.9" in log
    for step in ("env", "probe", "tests", "headline", "quick", "summary"):
        assert f"== {step}: exit 0," in log, log
    assert (
        log.index("== tests:") < log.index("== headline:") < log.index("== quick:") < log.index("== summary:")
    )
    assert _files(out) == set(DEFAULT)
    # The default plan's limits and a grace each fit one device call (600 s, less the machine's start).
    text = SCRIPT.read_text()
    plan = text.split("DEFAULT_PLAN=(", 1)[1].split(")", 1)[0].split()
    grace = int(text.split("GRACE=${GPU_REFERENCE_GRACE:-", 1)[1].split("}", 1)[0])
    assert [step.split(":")[0] for step in plan] == list(OWN)
    assert sum(int(step.split(":")[1]) + grace for step in plan) <= 540, plan


def test_a_plan_over_one_device_call_is_refused_and_a_step_is_cut_to_what_the_budget_has_left(tmp_path):
    result, _ = _run(tmp_path, ["env:40", "quick:500"], timeout_s=30)
    assert result.returncode == 2 and "the plan needs 542 s" in result.stdout, result.stdout  # grace 1 s
    assert not (tmp_path / "out").exists()
    cut = tmp_path / "cut"
    cut.mkdir()
    # 12 s for two 5 s steps and a second of grace each; the deaf one is killed at 6 s and its
    # journal rebuilt in 3 s, so the next step gets what is left, not its 5 s.
    result, wall = _run(
        cut,
        ["quick:5", "tests:5"],
        timeout_s=30,
        GPU_REFERENCE_BUDGET="12",
        FAKE_QUICK="deaf",
        FAKE_REBUILD_S="3",
    )
    log = (cut / "out" / "run.log").read_text()
    assert result.returncode == 0 and wall < 14, log
    assert "== tests: limit cut to" in log and "== tests: exit 0," in log


def test_a_bad_step_is_refused_before_anything_runs(tmp_path):
    result, _ = _run(tmp_path, ["env:2", "chekcs:30"], timeout_s=30)
    assert result.returncode == 2
    assert "unknown step chekcs" in result.stdout
    assert not (tmp_path / "out").exists()


def test_the_interpreter_is_python3_where_no_python_exists_and_no_cuda_stops_the_script(tmp_path):
    """Every step called `python` by name: on the lending machine each would exit 127 in a second,
    and with no CUDA every step "passed" with nothing measured."""
    run, _ = _run(tmp_path, ["env:5", "headline:5", "quick:5"], 60)
    assert run.returncode == 0 and "torch 9.9 (fake)" in run.stdout, run.stdout
    assert "exit 127" not in run.stdout and {"headline.json.gz", "quick.json.gz"} <= _files(tmp_path / "out")
    stopped = tmp_path / "nocuda"
    stopped.mkdir()
    run, _ = _run(stopped, ["env:5", "probe:5", "headline:5", "quick:5"], 60, FAKE_ENV="nocuda")
    assert run.returncode == 3, run.stdout
    assert run.stdout.splitlines()[-1] == (
        ".ci/gpu-reference: stopped after env: CUDA is not available to python3, "
        "so no step would measure anything"
    )
    assert _files(stopped / "out") == {"run.log"}


def test_a_rerun_never_replaces_a_steps_files(tmp_path):
    """A rerun of `quick` into the same folder, cut short, replaced a complete quick.json.gz."""
    run, _ = _run(tmp_path, ["quick:5"], 60)
    before = (tmp_path / "out" / "quick.json.gz").read_bytes()
    again = tmp_path / "again"
    again.mkdir()
    (again / "out").symlink_to(tmp_path / "out")
    run, _ = _run(again, ["quick:5"], 60, FAKE_QUICK="hang")
    assert run.returncode == 2 and "already holds step quick" in run.stdout
    assert (tmp_path / "out" / "quick.json.gz").read_bytes() == before
