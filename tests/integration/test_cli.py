"""The console command (suite/cli.py) on a real run: a -k that matches nothing names the nearest catalogue
IDs."""

from __future__ import annotations

import subprocess

import pytest

from tests.launcher import PYTEST, ROOT


@pytest.mark.integration
def test_a_keyword_that_matches_nothing_names_the_nearest_catalogue_ids():
    run = subprocess.run(
        [*PYTEST, "suite", "-q", "--collect-only", "-k", "lyernorm"], cwd=ROOT, capture_output=True, text=True
    )
    assert "-k 'lyernorm' matched no test; catalogue IDs like it: layernorm.manual" in run.stdout
