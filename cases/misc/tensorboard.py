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


def check_image_graph_embedding(device):
    """001's three other calls, each read back: add_image's PNG holds the grid's pixels (x·255
    truncated to uint8), add_graph's GraphDef holds the module's ops, add_embedding's
    projector files hold the features, the metadata and a sprite of the label images."""
    import io

    import torch
    from PIL import Image
    from torch import nn
    from torch.utils.tensorboard import SummaryWriter

    g = torch.Generator().manual_seed(0)
    grid = torch.rand(3, 20, 30, generator=g)
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    images = torch.rand(12, 8, 8, generator=g)
    features = images.view(-1, 64)
    labels = [f"class{i % 3}" for i in range(12)]
    with tempfile.TemporaryDirectory() as tmp:
        writer = SummaryWriter(tmp)
        writer.add_image("batch_images", grid)
        writer.add_graph(net, torch.randn(2, 4, generator=g))
        writer.add_embedding(features, metadata=labels, label_img=images.unsqueeze(1))
        writer.close()
        acc = _accumulator(tmp)
        png = Image.open(io.BytesIO(acc.Images("batch_images")[0].encoded_image_string))
        # A float image in [0, 1] is stored as uint8 of x·255 in float32, truncated (summary.image).
        want = np.floor(grid.permute(1, 2, 0).numpy() * np.float32(255)).astype(np.uint8)
        pixels_off = int(np.abs(np.asarray(png.convert("RGB")).astype(int) - want.astype(int)).max())
        ops = [n.op for n in acc.Graph().node]
        folder = os.path.join(tmp, "00000", "default")
        table = np.loadtxt(os.path.join(folder, "tensors.tsv"), delimiter="\t", dtype=np.float64)
        with open(os.path.join(folder, "metadata.tsv")) as f:
            metadata = f.read().split()
        sprite = Image.open(os.path.join(folder, "sprite.png")).size
    features_off = (
        float(np.abs(table - features.double().numpy()).max()) if table.shape == (12, 64) else np.inf
    )
    return judge_image_graph_embedding(pixels_off, ops, features_off, metadata == labels, sprite)


def _accumulator(log_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(log_dir, size_guidance={"images": 0})
    acc.Reload()
    return acc


def judge_image_graph_embedding(pixels_off, ops, features_off, metadata_equal, sprite) -> Finding:
    # An image is stored as uint8 after the same float32 x·255 and truncation as the truth, so
    # any difference means a wrong image. tensors.tsv prints float32 with repr precision: exact after parsing
    # up to float32's u relative (values < 1: 2⁻²⁴ absolute).
    parts = {
        "add_image": pixels_off == 0,
        "add_graph": {"aten::linear", "aten::relu"} <= set(ops),
        "add_embedding": features_off <= 2.0**-24 and metadata_equal and sprite == (32, 32),
    }
    evidence = (
        f"add_image: PNG pixels off by {pixels_off} (of 255); add_graph: ops {sorted(set(ops))}; "
        f"add_embedding: features off by {features_off:.2g}, "
        f"metadata {'equal' if metadata_equal else 'DIFFERS'}, "
        f"sprite {sprite[0]}×{sprite[1]} (4×4 tiles of 8×8)"
    )
    bad = [name for name, ok in parts.items() if not ok]
    return Finding(
        Verdict.FAILS if bad else Verdict.HOLDS,
        evidence + (f"; NOT as written: {', '.join(bad)}" if bad else ""),
    )


CASE = Case(
    id="misc.tensorboard",
    tier=3,
    claim="SummaryWriter.add_scalar logs scalars; different SummaryWriter objects with the same name (tag) "
    "and log_dir land in one chart; add_image, add_graph and add_embedding write what they say.",
    source="004 Tensorboard 可视化, 000/001 Visualization",
    requires=("module:tensorboard",),
    checks={
        "two_writers_one_chart": Check(check_two_writers_one_chart, devices=("cpu",)),
        "notes_import_line": Check(check_notes_import_line, devices=("cpu",)),
        "image_graph_embedding": Check(check_image_graph_embedding, devices=("cpu",)),
    },
)
