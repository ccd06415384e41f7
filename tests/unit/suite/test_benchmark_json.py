"""``--benchmark-json`` opened at the write, not at the parse (suite/benchmark_json.py): the option
pytest-benchmark declares with a truncating file type is given `PendingJson`, so parsing the
command line leaves the file as it was."""

from __future__ import annotations

import argparse

from _pytest.config.argparsing import Parser

from harness.run.results_file import PendingJson
from suite import benchmark_json


def _parser() -> Parser:
    parser = Parser(_ispytest=True)
    parser.getgroup("benchmark").addoption("--benchmark-json", type=argparse.FileType("wb"), default=None)
    return parser


def test_parsing_the_option_no_longer_truncates_the_file(tmp_path):
    target = tmp_path / "bench.json"
    target.write_text("the previous run's results")
    parser = _parser()
    assert benchmark_json.defer_open(parser)
    options = parser.parse(["--benchmark-json", str(target)])
    assert isinstance(options.benchmark_json, PendingJson) and options.benchmark_json.name == str(target)
    assert target.read_text() == "the previous run's results"


def test_without_the_option_nothing_is_changed():
    assert not benchmark_json.defer_open(Parser(_ispytest=True))
