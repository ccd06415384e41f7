"""The notes' snippets run as written: one fresh interpreter per note (each imports torch: seconds apiece),
once per session; the errata found, and the snippets check judging its IDs' snippets."""

from __future__ import annotations

import pytest

from cases._lib import snippets as sn
from cases._lib.snippet_map import SNIPPETS
from harness.contract.record import ErratumKind

# The notes' snippets run once for the module (note_results): under `-n auto --dist loadgroup` (the
# test command) every test of this module goes to the same worker.
pytestmark = pytest.mark.xdist_group("test_snippets")

# ---- running the notes (fresh interpreters) -----------------------------------------------------

# What the notes as written give on torch 2.13 (CPU): the errata a run must find, by snippet.
EXPECTED_ERRATA = {
    "000#1": "typo",  # nn.LSTM(input_size hidden_size ...): an argument-list sketch
    "000#2": "typo",  # forward returns h_state, its local is hidden_state
    "000#6": "removed API",  # dist.all_reduce_multigpu
    "000#10": "typo",  # MyDataSet: the docstring is not indented
    "000#11": "typo",  # SummmaryWritter
    "001#1": "typo",
    "001#2": "typo",
    "001#8": "removed API",
    "001#12": "typo",
    "001#13": "typo",
    "001#15": "removed API",  # bare inf (torch._six)
    "001#18": "wrong statement",  # m.weight.fill_ on a leaf that requires grad, outside no_grad
    "001#19": "typo",  # net.appply
    "001#20": "typo",  # Module, Parameter: torch's source without its imports
    "001#21": "typo",
    "001#22": "typo",
    "001#25": "typo",  # required
    "001#27": "typo",  # Optimizer
    "003#2": "deprecated API",  # torch.jit.script
    "003#7": "deprecated API",
    "003#8": "typo",  # opt.zero_grad() where the optimizer is `optimizer`
    "003#10": "typo",  # Enum
    "003#12": "typo",  # Adam, SGD never imported
    "003#20": "typo",  # record_3: the output written as code
    "003#21": "typo",
    "003#22": "typo",  # namedtuple
    "004#3": "typo",
    "004#5": "typo",
    "004#7": "typo",
    "004#8": "typo",
    "004#9": "typo",
    "004#11": "typo",
    "004#14": "typo",
    "004#15": "typo",  # label used in its own definition
    "004#18": "wrong statement",  # torch.range(12)
    "004#20": "typo",
    "004#23": "typo",  # epochoptimizer: a missing comma
    "004#25": "typo",  # file_object
    "004#26": "typo",
    "004#28": "typo",
    "004#30": "typo",
    "004#31": "typo",
    "004#32": "typo",  # wold_size
    "004#33": "typo",  # init(os.environ[...])
}


@pytest.fixture(scope="module")
def note_results():
    by_note = sn.run_notes(["000", "001", "002", "003", "004"])
    return {r["locator"]: r for rs in by_note.values() for r in rs}


@pytest.mark.integration
def test_runnable_snippets_run_and_the_rest_say_why(note_results):
    for loc, entry in SNIPPETS.items():
        r = note_results[loc]
        if entry.runs and not r.get("compile_error"):
            assert r["ran"] or "not installed" in r["not_run"], loc
        else:
            assert not r["ran"] and r["not_run"], loc


@pytest.mark.integration
def test_the_errata_found(note_results):
    found = {
        loc: sn.classify(sn.failures_of(r)[0]).value for loc, r in note_results.items() if sn.failures_of(r)
    }
    if "004#0" not in found and not note_results["004#0"]["ran"]:
        found.pop("004#0", None)  # tensorboard not installed: not run
    assert found == EXPECTED_ERRATA


@pytest.mark.integration
def test_snippets_check_judges_the_ids_snippets(note_results):
    finding = sn.snippets_check("clip.grad_norm").fn("cpu")
    (erratum,) = finding.errata
    assert erratum.kind is ErratumKind.REMOVED_API and "inf" in erratum.quote
    assert finding.evidence.startswith("clip.grad_norm: 1 snippets: 1 compiled, 1 ran, 1 failing")
    text = sn.summary()
    assert "snippets found: 116" in text and "compile failures: 18" in text
