"""The machine's A/A noise floor (harness/machine/noise.py): one computation timed against itself
in interleaved rounds; the floor is how far its ratio's interval strays from 1."""

from __future__ import annotations

from harness.machine import noise


def test_the_floor_of_a_computation_against_itself_is_small_and_says_how_it_was_timed(monkeypatch):
    monkeypatch.setattr(noise, "CAP_S", 0.2)
    monkeypatch.setattr(noise, "MIN_ROUNDS", 30)
    got = noise.measured("cpu")
    assert got["rounds"] >= 30
    assert got["timer"] and "load" in got
    # two identical sides: the interval hugs 1 (a floor of 50% would mean the pair is not paired)
    assert got["floor"] is None or 0 <= got["floor"] < 0.5
