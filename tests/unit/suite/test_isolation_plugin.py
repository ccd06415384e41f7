"""A sticky CUDA error fails its own test only, the pytest glue (suite/isolation_plugin.py): the
option that turns the fresh worker off, isolation on by default."""

from __future__ import annotations

from _pytest.config.argparsing import Parser

from suite import isolation_plugin


def test_isolation_is_on_unless_no_isolation_is_given():
    parser = Parser(_ispytest=True)
    isolation_plugin.pytest_addoption(parser)
    assert parser.parse([]).no_isolation is False
    assert parser.parse(["--no-isolation"]).no_isolation is True
