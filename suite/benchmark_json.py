"""pytest-benchmark's ``--benchmark-json`` opened at the write, not at the parse: a pytest plugin
loaded with ``-p suite.benchmark_json`` (the project's addopts), before the entry-point plugins.

pytest-benchmark declares the option with ``type=argparse.FileType('wb')``, so the file is opened,
and truncated, while pytest parses the command line: before any conftest runs and before the
suite's results lock (`harness.run.results_file`) can refuse a second run, whose refusal then came
after the first run's results were already emptied. pytest parses the known options right after
loading the entry-point plugins, before any conftest, so this plugin is loaded by ``-p`` (which
comes earlier still; an entry point of this package would also do, but would make pytest rewrite
the asserts of all its packages); it swaps the option's type for `results_file.PendingJson` (a
path opened at the first write) as soon as pytest-benchmark's option exists. pytest has no API for
changing another plugin's option: the type is set where each pytest keeps it, on the argparse
action (pytest 9 adds options to its argparse parser at once) and on pytest's `Argument` (pytest 8
builds the parser from those).
"""

from __future__ import annotations

import weakref

_PARSERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # plugin manager → its parser


def pytest_addoption(parser, pluginmanager):
    _PARSERS[pluginmanager] = parser
    defer_open(parser)


def pytest_plugin_registered(plugin, manager):
    # pytest-benchmark may be registered after this plugin: its option is then added now.
    parser = _PARSERS.get(manager)
    if parser is not None:
        defer_open(parser)


def defer_open(parser) -> bool:
    """``--benchmark-json``'s type made `PendingJson`, where the option exists; True if it does."""
    from harness.run.results_file import PendingJson

    found = False
    for action in getattr(getattr(parser, "optparser", None), "_actions", ()):
        if "--benchmark-json" in action.option_strings:
            action.type = PendingJson
            found = True
    for group in parser._groups:
        for argument in group.options:
            if "--benchmark-json" in argument.names():
                argument.type = argument._attrs["type"] = PendingJson
                found = True
    return found
