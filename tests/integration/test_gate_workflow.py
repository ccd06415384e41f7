"""The example GitHub workflow: valid YAML and a valid Actions workflow (linted with yamllint and
check-jsonschema's vendored GitHub schema)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

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
