"""cases/_launch/isolated.py: the child's side run in this process (its `os._exit` stubbed), so
what a call returned or raised comes back as plain data in the answer file the parent reads; the
parent's side on a real child is tests/integration/test_premises.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from cases._launch import isolated


class Exited(Exception):
    pass


@pytest.fixture
def child(tmp_path, monkeypatch):
    def exit_(code):
        raise Exited(code)

    monkeypatch.setattr(isolated, "os", SimpleNamespace(_exit=exit_))

    def call(target: str, *args, slot: int = 0) -> dict:
        with pytest.raises(Exited):
            isolated.main([target, json.dumps(list(args)), "--out", str(tmp_path), "--slot", str(slot)])
        assert not list(tmp_path.glob("*.tmp"))  # the answer is whole or absent
        return json.loads((tmp_path / f"isolated{slot}-rank0.json").read_text())

    return call


def test_a_returned_value_comes_back_as_data(child):
    assert child("math:sqrt", 4.0) == {"rank": 0, "value": 2.0, "error": None}


def test_a_raised_error_comes_back_with_its_type_and_bases(child):
    answer = child("math:sqrt", -1.0, slot=3)
    assert answer["value"] is None
    error = answer["error"]
    assert (error["type"], error["bases"]) == (
        "ValueError",
        ["ValueError", "Exception", "BaseException", "object"],
    )
    assert error["message"]  # its words are the Python version's


def test_a_child_without_an_answer_is_an_error_of_the_parent(monkeypatch, tmp_path):
    silent = SimpleNamespace(timed_out=False, logs=[""], describe=lambda: "exit codes [1]")
    monkeypatch.setattr(isolated.launch, "run", lambda commands, **kw: silent)
    with pytest.raises(RuntimeError, match="gave no answer"):
        isolated.run("math:sqrt", 4.0)
