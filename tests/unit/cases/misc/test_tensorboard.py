"""The judges of `cases/misc/tensorboard.py`: each verdict follows from what its check observed (a different
observation gives a different verdict), and an erratum appears only where the notes were wrong."""

from __future__ import annotations

import os

from cases.misc import tensorboard
from harness.contract.record import Verdict

# ---- misc.tensorboard -----------------------------------------------------------------------------------


def test_two_writers_one_chart():
    written = {"Loss/train": [(0, 0.5), (0, 0.25)]}
    runs = ["exp1", "exp2"]
    assert tensorboard.judge_two_writers_one_chart(written, written, 2, runs).verdict is Verdict.HOLDS
    half = {"Loss/train": [(0, 0.5)]}
    assert tensorboard.judge_two_writers_one_chart(half, written, 2, runs).verdict is Verdict.FAILS
    assert tensorboard.judge_two_writers_one_chart(written, written, 2, ["exp1"]).verdict is Verdict.FAILS


def test_default_log_dir():
    here = os.path.join("runs", "Nov26_13-39-20_host")
    assert tensorboard.judge_default_log_dir(here, True, "host").verdict is Verdict.HOLDS
    assert tensorboard.judge_default_log_dir(here, True, "other").verdict is Verdict.FAILS
    assert (
        tensorboard.judge_default_log_dir(os.path.join("logs", "x_host"), True, "host").verdict
        is Verdict.FAILS
    )


def test_tensorboard_image_graph_embedding_judged_on_what_was_read_back():
    from cases.misc import tensorboard

    ops = ["aten::linear", "aten::relu"]
    assert tensorboard.judge_image_graph_embedding(0, ops, 0.0, True, (32, 32)).verdict is Verdict.HOLDS
    assert tensorboard.judge_image_graph_embedding(1, ops, 0.0, True, (32, 32)).verdict is Verdict.FAILS
    assert tensorboard.judge_image_graph_embedding(0, ops[:1], 0.0, True, (32, 32)).verdict is Verdict.FAILS
    assert tensorboard.judge_image_graph_embedding(0, ops, 1e-3, True, (32, 32)).verdict is Verdict.FAILS


def test_import_line_judged_on_the_right_name_and_the_typo_listed_once():
    """004's import line decides; 000/001's `SummmaryWritter` is the snippets check's erratum, so
    this judge reports it without listing it a second time."""
    f = tensorboard.judge_import_line(False, True)
    assert f.verdict is Verdict.HOLDS and f.errata == () and "ImportError" in f.evidence
    assert tensorboard.judge_import_line(False, False).verdict is Verdict.FAILS


def test_embedding_sprite_judged_on_the_grey_levels_kept():
    f = tensorboard.judge_embedding_sprite(254, 0, 1.0)
    assert f.verdict is Verdict.FAILS and "saturated" in f.evidence and "use that" in f.evidence
    assert tensorboard.judge_embedding_sprite(0, 0, 0.0).verdict is Verdict.HOLDS
    assert tensorboard.judge_embedding_sprite(1, 0, 0.0).verdict is Verdict.HOLDS  # one level of truncation
    assert tensorboard.judge_embedding_sprite(2, 0, 0.0).verdict is Verdict.FAILS
