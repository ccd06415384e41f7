"""``torch-technique-suite report|gate|estimate``: the suite's commands under one name.

The same as ``python -m reports build``, ``python -m reports gate`` and ``python -m suite.estimate``
(which keep working); this only dispatches, so each command's options, messages and exit status
are its own.
"""

from __future__ import annotations

import sys

USAGE = (
    "usage: torch-technique-suite {report,gate,estimate} ...\n"
    "  report RESULTS... [--out DIR]   results JSON -> CSV, plots, index.html (python -m reports build)\n"
    "  gate --baseline B --current C   regression gate (python -m reports gate)\n"
    "  estimate -- PYTEST_ARGS         a run's duration before it is made (python -m suite.estimate)"
)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else ""
    if command in ("report", "build", "gate"):
        from reports.__main__ import main as reports_main

        return reports_main(["build" if command in ("report", "build") else "gate", *argv[1:]])
    if command == "estimate":
        from suite.estimate import main as estimate_main

        return estimate_main(argv[1:]) or 0
    print(USAGE, file=sys.stderr)
    return 2 if command not in ("-h", "--help") else 0


if __name__ == "__main__":
    sys.exit(main())
