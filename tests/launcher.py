"""How the harness's own tests start a separate pytest run of the suite."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]

# pytest as `python -m pytest`, but with SIGINT raising KeyboardInterrupt as at a terminal: a shell
# without job control starts background commands with SIGINT ignored, exec keeps that, and a
# child that ignores SIGINT cannot show what an interrupt does.
INTERRUPTIBLE_PYTEST = [
    sys.executable,
    "-c",
    (
        "import runpy, signal; "
        "signal.signal(signal.SIGINT, signal.default_int_handler); "
        "runpy.run_module('pytest', run_name='__main__', alter_sys=True)"
    ),
]
