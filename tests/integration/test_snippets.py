"""The notes' snippets run as written: one fresh interpreter per note (each imports torch: seconds apiece),
once per session; the errata found, and the snippets check judging its IDs' snippets."""

from __future__ import annotations

import pytest

import cases
from harness.contract.record import ErratumKind
from notes import __main__ as notes_main
from notes import classify, run
from notes.map import SNIPPETS

# The notes' snippets run once for the module (note_results): under `-n auto --dist loadgroup` (the
# test command) every test of this module goes to the same worker.
pytestmark = pytest.mark.xdist_group("test_snippets")

# ---- running the notes (fresh interpreters) -----------------------------------------------------

# What the notes as written give on torch 2.13 (CPU): the errata a run must find, by note line.
# Templates (placeholders the notes never define: 001#5 `net`, 001#17 `net` with an fc2, 001#29
# `epoch`, 003#8 the AMP loop, 004#4 `dataloader`) are read statically, not run: their
# placeholders are no slip of the pen, a misspelling inside them is. 003#20 is an interactive
# session (its last line the echoed output), shown as what it is.
EXPECTED_ERRATA = {
    "000:40": "typo",  # forward returns h_state, its local is hidden_state (h_state is bound next)
    "000:50": "raises as written",  # rnn, the notes' model, never defined
    "000:136": "removed API",  # dist.all_reduce_multigpu
    "000:171": "typo",  # argparse used, imported only in the next snippet
    "000:251": "typo",  # MyDataSet: the docstring is not indented
    "000:279": "typo",  # SummmaryWritter
    "001:44": "typo",
    "001:55": "raises as written",
    "001:176": "removed API",
    "001:213": "typo",
    "001:301": "typo",
    "001:330": "typo",
    "001:485": "typo",  # net.appply
    "003:217": "deprecated API",  # torch.jit.script
    "003:221": "deprecated API",  # torch.jit.trace
    "003:245": "deprecated API",  # torch.jit.load
    "003:278": "typo",  # opt.zero_grad() where the optimizer is `optimizer`
    "004:119": "typo",
    "004:242": "typo",
    "004:331": "typo",
    "004:367": "typo",
    "004:436": "typo",
    "004:507": "raises as written",  # label used in its own definition
    "004:570": "raises as written",  # torch.range(12)
    "004:625": "typo",
    "004:795": "typo",  # re never imported
    "004:854": "typo",  # epochoptimizer: a lost comma
    "004:880": "typo",  # file_object, json never imported
    "004:901": "typo",  # json never imported
    "004:957": "typo",
    "004:1422": "typo",  # wold_size
    "004:1439": "typo",  # init(os.environ[...])
}


@pytest.fixture(scope="module")
def note_results():
    by_note = run.run_notes(["000", "001", "002", "003", "004"])
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
def test_only_code_is_run_or_read_as_the_notes_code(note_results):
    for loc, r in note_results.items():
        if r["class"] != "code":
            assert not any(r.get(k) for k in ("compile_error", "error", "static", "deprecations")), loc
            assert classify.errata_of(r) == [], loc


@pytest.mark.integration
def test_the_errata_found(note_results):
    found = {}
    for r in note_results.values():
        for e in classify.errata_of(r):
            assert e.where not in found, f"two errata on {e.where}"
            found[e.where] = e.kind.value
    if not note_results["000#11"]["ran"]:  # tensorboard not installed: the import fails otherwise
        found = {k: v for k, v in found.items() if k not in ("000:279", "001:330")}
        expected = {k: v for k, v in EXPECTED_ERRATA.items() if k not in ("000:279", "001:330")}
    else:
        expected = EXPECTED_ERRATA
    assert found == expected


@pytest.mark.integration
def test_snippets_check_judges_the_ids_snippets(note_results):
    finding = cases.snippets_check("parallel.average_gradient").fn("cpu")
    assert [(e.kind, e.where) for e in finding.errata] == [
        (ErratumKind.REMOVED_API, "000:136"),
        (ErratumKind.REMOVED_API, "001:176"),
    ]
    clip = cases.snippets_check("clip.grad_norm").fn("cpu")
    assert clip.errata == () and "001#15 source" in clip.evidence
    text = notes_main.summary()
    assert "snippets found: 116" in text and "code compile failures: 9" in text
    assert (
        "by class: code: 76, transcript: 3, source: 12, signature: 3, pseudo: 5, shell: 4, text: 13" in text
    )
