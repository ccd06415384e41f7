"""The console command (suite/cli.py), without a run."""

from __future__ import annotations

import json

from suite import cli
from tests import synthetic


def test_console_command_dispatches_to_the_reports(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(synthetic.result()))
    assert cli.main(["report", str(path), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "verdicts.csv").exists()
    assert cli.main(["gate", "--baseline", str(path), "--current", str(path), "--allow-unjudged"]) == 0
    assert cli.main([]) == 2 and "usage: torch-technique-suite" in capsys.readouterr().err
