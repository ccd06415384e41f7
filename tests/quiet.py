"""Wall-clock assertions that tell a slow harness from a busy machine.

A `timing` test starts only on a machine that measures quiet (tests/conftest.py); a job that
starts during its measurement can still stretch it. `hold` asserts the bound, and where it missed
and the machine measures busy now, skips with the figures instead: a miss that the neighbours
explain is not evidence against the harness."""

from __future__ import annotations

import pytest

from harness.host import load


def hold(ok: bool, message: str) -> None:
    if ok:
        return
    reason = load.measure().busy_reason()
    if reason:
        pytest.skip(f"{message}; not judged: {reason}")
    pytest.fail(message, pytrace=False)
