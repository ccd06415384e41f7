"""TensorBoard scalars (notes 004 "Tensorboard 可视化", 000/001 Visualization). Needs the optional
``tensorboard`` package (pyproject extra ``tensorboard``); skipped with the reason without it.

The notes' claim: different SummaryWriter objects writing one tag to one log_dir land in one chart.
TensorBoard draws a chart per (run, tag), and a run is a directory, so the check writes with two
writers and reads the directory back with TensorBoard's own loader (`EventAccumulator`). Event
files go to a temp dir.
"""

from __future__ import annotations

import importlib
import os
import tempfile

import numpy as np

from cases.spec import Case, Check, Erratum, ErratumKind, Finding, Verdict

TAGS = ("Loss/train", "Loss/test", "Accuracy/train", "Accuracy/test")
STEPS = 20


def _write(log_dir, values):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=log_dir)
    for n_iter in range(STEPS):
        for tag in TAGS:
            writer.add_scalar(tag, values[tag][n_iter], n_iter)
    writer.close()


def _read(log_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(log_dir, size_guidance={"scalars": 0})  # 0: keep every event
    acc.Reload()
    return acc


def check_two_writers_one_chart(device):
    rng = np.random.default_rng(0)
    first = {tag: rng.random(STEPS) for tag in TAGS}
    second = {tag: rng.random(STEPS) for tag in TAGS}
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "exp1")
        _write(run, first)
        _write(run, second)  # writer_2 in the notes: same log_dir, same tags
        files = sorted(os.listdir(run))
        acc = _read(run)
        other = os.path.join(tmp, "exp2")
        _write(other, first)
        runs = sorted(d for d in os.listdir(tmp) if os.path.isdir(os.path.join(tmp, d)))
        tags = acc.Tags()["scalars"]
        assert sorted(tags) == sorted(TAGS), tags
        for tag in TAGS:
            events = acc.Scalars(tag)
            got = sorted((e.step, e.value) for e in events)
            want = sorted(
                [(i, float(np.float32(v))) for i, v in enumerate(first[tag])]
                + [(i, float(np.float32(v))) for i, v in enumerate(second[tag])]
            )
            assert got == want, f"{tag}: read back {len(got)} points, expected both writers' {len(want)}"
    assert len(files) == 2, f"two writers should write two event files, found {files}"
    assert runs == ["exp1", "exp2"]
    return Finding(
        Verdict.HOLDS,
        f"two SummaryWriters on one log_dir wrote {len(files)} event files; EventAccumulator reads one run "
        f"whose tag 'Loss/train' holds all {2 * STEPS} values (both writers, float32-exact, steps "
        f"0..{STEPS - 1} twice); a different log_dir is a separate run (chart line)",
    )


def check_notes_import_line(device):
    module = importlib.import_module("torch.utils.tensorboard")
    assert hasattr(module, "SummaryWriter")
    misspelled = hasattr(module, "SummmaryWritter")  # the notes' 000/001 import line
    try:
        exec("from torch.utils.tensorboard import SummmaryWritter", {})
        imported = True
    except ImportError:
        imported = False
    assert imported == misspelled
    return judge_import_line(imported, hasattr(module, "SummaryWriter"))


def judge_import_line(notes_line_imports: bool, right_name_imports: bool) -> Finding:
    """The technique: SummaryWriter imports from torch.utils.tensorboard. The notes' spelling of
    it is their own matter: a typo is an erratum, as in every ID."""
    errata = ()
    if not notes_line_imports:
        errata = (
            Erratum(
                ErratumKind.TYPO,
                "from torch.utils.tensorboard import SummmaryWritter",
                "ImportError: the class is SummaryWriter",
            ),
        )
    return Finding(
        Verdict.HOLDS if right_name_imports else Verdict.FAILS,
        f"torch.utils.tensorboard.SummaryWriter {'imports' if right_name_imports else 'does NOT import'}",
        errata,
    )


CASE = Case(
    id="misc.tensorboard",
    tier=3,
    claim="SummaryWriter.add_scalar logs scalars; different SummaryWriter objects with the same name (tag) "
    "and log_dir land in one chart.",
    source="004 Tensorboard 可视化, 000/001 Visualization",
    requires=("module:tensorboard",),
    checks={
        "two_writers_one_chart": Check(check_two_writers_one_chart, devices=("cpu",)),
        "notes_import_line": Check(check_notes_import_line, devices=("cpu",)),
    },
)
