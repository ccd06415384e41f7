"""The judges of `cases/data/loading.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

from cases import get_case
from cases.data import loading
from harness.contract.record import Verdict

# ---- data.loading ------------------------------------------------------------------------------


def _row(n, bs, **over):
    row = dict(
        n=n,
        bs=bs,
        length=-(-n // bs),
        dropped=n // bs,
        once=True,
        last_ok=True,
        kept=(n // bs) * bs,
        differ=True if n > 10 else None,
    )
    row.update(over)
    return tuple(row.values())


def test_loader_length_from_observations():
    rows = [_row(100, 32), _row(7, 10)]
    err = "TypeError: 'DataLoader' object is not subscriptable"
    assert loading.judge_loader_length(rows, err, True).verdict is Verdict.HOLDS
    assert loading.judge_loader_length([_row(100, 32, length=3)], err, True).verdict is Verdict.FAILS
    assert loading.judge_loader_length([_row(100, 32, once=False)], err, True).verdict is Verdict.FAILS
    assert loading.judge_loader_length([_row(100, 32, differ=False)], err, True).verdict is Verdict.FAILS
    assert loading.judge_loader_length(rows, "", True).verdict is Verdict.FAILS  # indexable


def test_shuffle_with_sampler_from_observations():
    msg = "sampler option is mutually exclusive with shuffle"
    assert loading.judge_shuffle_with_sampler(msg, True).verdict is Verdict.HOLDS
    assert loading.judge_shuffle_with_sampler("", True).verdict is Verdict.FAILS
    assert loading.judge_shuffle_with_sampler(msg, False).verdict is Verdict.FAILS


def test_collate_batch_from_observations():
    good = ("tuple", "list", [(4, 3, 64, 64), (4,)], "torch.int64", True)
    assert loading.judge_collate_batch(*good).verdict is Verdict.HOLDS
    assert loading.judge_collate_batch("tuple", "tuple", *good[2:]).verdict is Verdict.FAILS
    assert loading.judge_collate_batch(*good[:4], False).verdict is Verdict.FAILS


def test_collate_fn_input_fails_where_it_is_not_a_tuple():
    f = loading.judge_collate_fn_input("list", 4, True)
    assert f.verdict is Verdict.FAILS and f.errata == () and "not a tuple" in f.evidence
    assert loading.judge_collate_fn_input("tuple", 4, True).verdict is Verdict.HOLDS
    assert loading.judge_collate_fn_input("tuple", 3, True).verdict is Verdict.FAILS
    assert loading.judge_collate_fn_input("tuple", 4, False).verdict is Verdict.FAILS


def test_collate_fn_owner_fails_where_dataset_takes_none():
    assert loading.judge_collate_fn_owner(["DataLoader"]).verdict is Verdict.FAILS
    assert loading.judge_collate_fn_owner(["Dataset", "DataLoader"]).verdict is Verdict.HOLDS


def test_collate_fn_claim_quotes_the_false_half():
    (claim,) = [c for c in get_case("data.loading").claims if c.id == "collate_fn_input"]
    assert "so the input is a tuple." in claim.quote and "__getitem__" in claim.quote


def test_notes_signature_wrong_default_fails():
    actual = {**loading.NOTES_LOADER_DEFAULTS, "shuffle": None, "prefetch_factor": None}
    f = loading.judge_notes_signature(loading.NOTES_LOADER_DEFAULTS, actual, "ValueError: prefetch", "2.13")
    assert f.verdict is Verdict.FAILS and f.errata == () and "prefetch_factor (the notes 2" in f.evidence
    same = loading.judge_notes_signature(
        loading.NOTES_LOADER_DEFAULTS, dict(loading.NOTES_LOADER_DEFAULTS), "", "1.9"
    )
    assert same.verdict is Verdict.HOLDS


def test_the_notes_dataset_is_what_004_describes():
    image, label = loading.NotesPairs(3)[1]
    assert tuple(image.shape) == (3, 64, 64) and isinstance(label, int)
    assert set(loading.NotesSamples(2)[0]) == {"image", "labels"}


def test_workers_and_pin_memory_judges():
    every = list(range(4))
    assert loading.judge_workers(4, every, every, [2] * 4).verdict is Verdict.HOLDS
    assert loading.judge_workers(4, [0, 0, 1, 2], every, [2] * 4).verdict is Verdict.FAILS
    assert loading.judge_workers(4, every, every, [1] * 4).verdict is Verdict.FAILS
    assert loading.judge_pin_memory([True] * 4, True).verdict is Verdict.HOLDS
    assert loading.judge_pin_memory([True, False], True).verdict is Verdict.FAILS
    assert loading.judge_pin_memory([True] * 4, False).verdict is Verdict.FAILS
