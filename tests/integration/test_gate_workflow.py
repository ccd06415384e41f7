"""The example GitHub workflow: valid YAML and a valid Actions workflow (linted with yamllint and
check-jsonschema's vendored GitHub-workflows schema where installed), and every `python -m reports`
flag it uses exists."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from reports.__main__ import _parser
from tests import paths

WORKFLOW = paths.ROOT / ".github" / "workflows" / "benchmarks.yml"


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("yamllint") is None, reason="yamllint not installed")
def test_yamllint():
    config = (
        "{extends: default, rules: {line-length: {max: 120}, truthy: {check-keys: false}, "
        "document-start: disable}}"
    )
    done = subprocess.run(
        [sys.executable, "-m", "yamllint", "-d", config, str(WORKFLOW)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("check_jsonschema") is None, reason="check-jsonschema not installed"
)
@pytest.mark.integration
def test_actions_schema():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(WORKFLOW),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


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
