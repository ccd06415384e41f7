"""The gate run as CI runs it (`python -m reports gate ...`), in this process, for the gate's tests."""

from __future__ import annotations

from reports.__main__ import main


def run_gate(capsys, *args) -> tuple[int, str, str]:
    code = main(["gate", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err
