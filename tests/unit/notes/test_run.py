"""notes.run, the child's side: a snippet run whole in one namespace, a deprecation filed on the line
that called it, and the static reading of a snippet's free names and torch names."""

from __future__ import annotations

import warnings

from harness.contract.record import ErratumKind
from notes import classify, parse, run


def _snippet(source, tag="python", locator_index=0):
    return parse.Snippet("009_x.txt", locator_index, 10, tag, parse.language_of(tag, source), source)


def test_a_deprecation_is_filed_on_the_line_that_called_it():

    source = "def old():\n    warnings.warn('old() is deprecated', FutureWarning)\nx = 1\nold()\n"
    snippet = _snippet(source)
    error, deprecations, _ = run._run(snippet, {"warnings": warnings})
    assert error is None and [d["line"] for d in deprecations] == [2]
    # torch's own warning, raised inside torch: the line of the snippet that called torch.
    snippet = _snippet("import torch\nx = torch.ones(1)\ny = torch.range(0, 3)\n")
    _, deprecations, _ = run._run(snippet, {})
    assert [d["line"] for d in deprecations] == [3]


def test_static_reading_finds_slips_and_gone_torch_names():
    snippet = _snippet("y = torch.ones(2)\ndist.all_reduce_multigpu([y])\nz = wold_siz + 1\n")
    found, unresolved = run.static_failures(snippet, {"wold_size"}, (), ran=False)
    found = {f["name"]: f for f in found}
    assert classify.classify(found["all_reduce_multigpu"]) is ErratumKind.REMOVED_API
    assert classify.classify(found["wold_siz"]) is ErratumKind.TYPO
    # A name the notes never define, in code not run: listed, no erratum (no crash was seen).
    ok = _snippet("z = torch.zeros(2) + model(x)\n")
    assert run.static_failures(ok, set(), ("model",), ran=False) == ([], ["x"])
