"""Install the suite into the current environment, keeping a torch that is already there.

`tox -e gpu` / `tox -e multigpu` see the machine's site-packages: on a GPU box that holds its CUDA
build of torch, which must be kept; on a CPU box without torch, the package's own range
(`torch>=2.4`) would pull the newest CUDA build (several GB), so the pinned CPU wheel of
constraints.txt is installed instead. pip has no "constrain only if absent", hence this script.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def install_command(torch_present: bool, extras: str = "") -> list[str]:
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    command = [sys.executable, "-m", "pip", "install", "-q", "-e", target]
    if not torch_present:
        command += ["-c", str(ROOT / "constraints.txt")]
    return command


def main(argv: list[str]) -> int:
    extras = argv[0] if argv else ""
    present = importlib.util.find_spec("torch") is not None
    command = install_command(present, extras)
    print(
        ("keeping the installed torch" if present else "no torch here: the pinned CPU wheel")
        + ": "
        + " ".join(command),
        flush=True,
    )
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
