"""Nothing measured is lost when a run is cut short, the pytest glue (suite/persist.py): the
interrupt a cut-short run names in its results."""

from __future__ import annotations

import pytest

from harness.host import signals
from suite import persist


def test_each_way_a_run_is_cut_short_is_named():
    assert persist._describe_interrupt(signals.Terminated()) == "SIGTERM"
    assert persist._describe_interrupt(KeyboardInterrupt()) == "SIGINT (KeyboardInterrupt)"
    assert persist._describe_interrupt(pytest.exit.Exception("out of time")) == "pytest.exit: out of time"
    assert persist._describe_interrupt(pytest.Session.Interrupted("1 error")) == "stopped: 1 error"
