""".ci/gpu-reference in one short offline slot, with a fake `python3` and `nvidia-smi` first on a PATH
that has no `python` at all (as on the lending machine, where the venv's interpreter is python3):
each step is cut at its limit (and killed where it ignores the interrupt), the steps after it still
run, finished steps' files come back, no lock file is left, and at most 8 files (a device call's
limit) are in the output folder. The fakes stand in for a GPU machine's hangs: `nvidia-smi` that
never answers, a pytest whose main thread is stuck in a C call (SIGINT ignored), a worker started
in a session of its own."""

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

# `FAKE_<STEP>` picks a step's behaviour: ok (write the results, a lock file as a killed run leaves
# one, the JUnit XML where asked), hang (until interrupted), deaf (SIGINT ignored: only a kill ends
# it; it first writes a journal and a lock, and starts an orphan in a session of its own).
FAKE_PYTHON = r"""#!/usr/bin/env bash
results= junit= out= prev=
for a in "$@"; do
    case $prev in --results) results=$a ;; --out) out=$a ;; esac
    case $a in --junitxml=*) junit=${a#--junitxml=} ;; esac
    prev=$a
done
if [ "$1" = -c ]; then
    step=env
elif [ "$2" = harness.run.journal ]; then
    echo '{"rebuilt from": "'"$3"'"}' >"$out"
    exit 0
else
    step=$(basename "$results" .json)
fi
var=FAKE_${step^^}
case ${!var:-ok} in
nocuda)
    echo "torch 9.9 (fake, no CUDA)"; echo "NO CUDA: torch.cuda.is_available() is False"; exit 3 ;;
ok)
    if [ "$step" = env ]; then echo "torch 9.9 (fake)"; exit 0; fi
    echo '{"benchmarks": [], "step": "'"$step"'"}' >"$results"
    : >"$results.lock"
    [ -z "$junit" ] || echo '<testsuite/>' >"$junit"
    echo "1 passed (fake)" ;;
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


def test_each_step_is_cut_at_its_limit_and_the_others_still_run(tmp_path):
    pidfile = tmp_path / "orphan.pid"
    try:
        result, wall = _run(
            tmp_path,
            ["env:2", "checks:2", "quick:5", "tests:2"],
            timeout_s=60,
            FAKE_NVIDIA_SMI="deaf",
            FAKE_CHECKS="deaf",
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
    # 2 + 1 s (env, killed), 2 + 1 s (checks, killed), 2 s (tests, interrupted) and the fakes' starts.
    assert wall < 25, f"{wall:.1f} s\n{result.stdout[-3000:]}"
    assert "torch 9.9" in log  # what env printed before nvidia-smi hung is kept
    assert "== env: exit 137 (killed 1 s after its limit)" in log
    assert "== checks: exit 137 (killed 1 s after its limit)" in log
    assert "== quick: exit 0," in log
    assert "== tests: exit 124 (interrupted at its limit)" in log
    files = _files(out)
    assert not [f for f in files if f.endswith(".lock") or f.endswith(".tmp")], files
    assert {"quick.json.gz", "quick.log", "checks.json.gz", "checks.log", "tests.log"} <= files, files
    assert not [f for f in files if "journal" in f], files  # rebuilt into checks.json
    assert len(files) <= 8, files


def test_the_default_plan_leaves_at_most_eight_files(tmp_path):
    result, _ = _run(tmp_path, [], timeout_s=60)
    out = tmp_path / "out"
    assert result.returncode == 0, result.stdout[-3000:]
    log = (out / "run.log").read_text()
    assert "GPU 0: Fake H100" in log and "torch 9.9" in log
    for step in ("env", "checks", "quick", "tests"):
        assert f"== {step}: exit 0," in log, log
    assert _files(out) == {
        "run.log",
        "checks.log",
        "checks.xml",
        "checks.json.gz",
        "quick.log",
        "quick.json.gz",
        "tests.log",
        "tests.json.gz",
    }
    # The default plan's limits and a grace each fit one 9-minute device call.
    plan = SCRIPT.read_text().split("DEFAULT_PLAN=(", 1)[1].split(")", 1)[0].split()
    grace = int(SCRIPT.read_text().split("GRACE=${GPU_REFERENCE_GRACE:-", 1)[1].split("}", 1)[0])
    assert sum(int(step.split(":")[1]) + grace for step in plan) <= 540, plan


def test_a_bad_step_is_refused_before_anything_runs(tmp_path):
    result, _ = _run(tmp_path, ["env:2", "chekcs:30"], timeout_s=30)
    assert result.returncode == 2
    assert "unknown step chekcs" in result.stdout
    assert not (tmp_path / "out").exists()


def test_the_interpreter_is_python3_where_no_python_exists_and_no_cuda_stops_the_script(tmp_path):
    """Every step called `python` by name: on the lending machine each would exit 127 in a second,
    and with no CUDA every step "passed" with nothing measured."""
    run, _ = _run(tmp_path, ["env:5", "checks:5", "quick:5"], 60)
    assert run.returncode == 0 and "torch 9.9 (fake)" in run.stdout, run.stdout
    assert "exit 127" not in run.stdout and {"checks.json.gz", "quick.json.gz"} <= _files(tmp_path / "out")
    stopped = tmp_path / "nocuda"
    stopped.mkdir()
    run, _ = _run(stopped, ["env:5", "checks:5", "quick:5"], 60, FAKE_ENV="nocuda")
    assert run.returncode == 3 and "stopped after env: CUDA is not available" in run.stdout, run.stdout
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
