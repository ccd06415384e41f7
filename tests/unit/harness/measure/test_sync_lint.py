"""harness.measure.sync_lint on a CPU machine: torch.cuda's sync debug mode replaced by a stand-in that
raises as torch does when a synchronising call runs in mode "error"."""

from __future__ import annotations

import os

import pytest
import torch

from harness.measure import sync_lint

HERE = os.path.dirname(os.path.abspath(__file__))
SYNC_MESSAGE = "called a synchronizing CUDA operation"

# A library op outside the variant's own code, as `.item()` is: its frame is not the one to report.
_library = {}
exec(
    compile(
        "def item(mode):\n    if mode['now'] == 'error':\n        raise RuntimeError(MESSAGE + '\\nmore')\n",
        "/elsewhere/torch/_tensor.py",
        "exec",
    ),
    {"MESSAGE": SYNC_MESSAGE},
    _library,
)


@pytest.fixture
def mode(monkeypatch):
    """The sync debug mode, settable and readable as torch.cuda's; synchronize does nothing."""
    state = {"now": "default", "set": []}

    def set_mode(value):
        state["now"] = value
        state["set"].append(value)

    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: state["now"])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", set_mode)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    return state


def test_a_call_that_does_not_synchronise_finds_nothing(mode):
    calls = []
    assert sync_lint.hidden_sync(lambda: calls.append(mode["now"]), "cuda", HERE) is None
    assert calls == ["default", "error"]  # once to initialise, once linted
    assert mode["now"] == "default"


def test_a_hidden_sync_is_found_at_the_variants_own_line(mode):
    def variant():
        return _library["item"](mode)  # the line to report

    found = sync_lint.hidden_sync(variant, "cuda", HERE)
    assert found.startswith(SYNC_MESSAGE + " at "), found
    assert "more" not in found  # the message's first line only
    assert f"test_sync_lint.py:{variant.__code__.co_firstlineno + 1} (" in found, found
    assert '_library["item"](mode)' in found
    assert mode["now"] == "default"


def test_without_a_frame_of_its_own_the_innermost_is_named(mode):
    found = sync_lint.hidden_sync(lambda: _library["item"](mode), "cuda", "/nowhere")
    assert "/elsewhere/torch/_tensor.py:3" in found, found


def test_another_error_is_raised_and_the_mode_restored(mode):
    def broken():
        if mode["now"] == "error":
            raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        sync_lint.hidden_sync(broken, "cuda", HERE)
    assert mode["set"] == ["error", "default"]
    assert mode["now"] == "default"
