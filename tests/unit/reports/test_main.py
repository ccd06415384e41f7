"""python -m reports's command line (reports/__main__.py): every flag the example GitHub workflow passes
exists."""

from __future__ import annotations

import re

from reports.__main__ import _parser
from tests import paths

WORKFLOW = paths.ROOT / ".github" / "workflows" / "benchmarks.yml"


def test_reports_flags_used_by_the_workflow_exist():
    text = WORKFLOW.read_text()
    parser = _parser()
    sub = parser._subparsers._group_actions[0].choices
    for command in ("build", "gate"):
        assert f"python -m reports {command}" in text
        known = {flag for action in sub[command]._actions for flag in action.option_strings}
        line = " ".join(
            text_line for text_line in text.splitlines() if f"python -m reports {command}" in text_line
        )
        for flag in re.findall(r"(--[a-z-]+)", line):
            assert flag in known, f"{command} {flag}"
    assert "--recheck" in text and "--suspects" in text
