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
import re
import tempfile

import numpy as np

from cases.spec import Case, Check, Claim, ClaimKind, Finding, Verdict

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
        tags = sorted(acc.Tags()["scalars"])
        read = {tag: sorted((e.step, e.value) for e in acc.Scalars(tag)) for tag in tags}
    written = {
        tag: sorted(
            [(i, float(np.float32(v))) for i, v in enumerate(first[tag])]
            + [(i, float(np.float32(v))) for i, v in enumerate(second[tag])]
        )
        for tag in TAGS
    }
    return judge_two_writers_one_chart(read, written, len(files), runs)


def judge_two_writers_one_chart(
    read: dict[str, list], written: dict[str, list], event_files: int, runs: list[str]
) -> Finding:
    """The notes: different SummaryWriter objects with the same tag (and log_dir) land in one
    chart. TensorBoard draws one chart per (run, tag) and a run is a directory: holds where the one
    run read back holds every tag with both writers' points (float32-exact), while another log_dir is
    a run of its own."""
    missing = [tag for tag in written if read.get(tag) != written[tag]]
    holds = not missing and set(read) == set(written) and runs == ["exp1", "exp2"]
    counts = ", ".join(f"{tag} {len(read.get(tag, []))}/{len(written[tag])}" for tag in written)
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"two SummaryWriters on one log_dir wrote {event_files} event files; EventAccumulator reads one run "
        f"with points read/written per tag: {counts} (both writers, steps 0..{STEPS - 1} twice); runs "
        f"under the root: {runs} (a different log_dir is a separate run)"
        + (f"; NOT in one chart: {missing}" if missing else ""),
    )


def check_default_log_dir(device):
    """004's comment: with no log_dir, the writer goes to ./runs/CURRENT_DATETIME_HOSTNAME."""
    import socket

    from torch.utils.tensorboard import SummaryWriter

    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            writer = SummaryWriter()
            log_dir = os.path.relpath(writer.log_dir, tmp)
            made = os.path.isdir(os.path.join(tmp, log_dir))
            writer.close()
        finally:
            os.chdir(here)
    return judge_default_log_dir(log_dir, made, socket.gethostname())


def judge_default_log_dir(log_dir: str, made: bool, hostname: str) -> Finding:
    """Holds where the default directory is runs/<date>_<time>_<hostname> under the working directory."""
    parent, _, name = log_dir.partition(os.sep)
    dated = re.match(r"\w+\d{2}_\d{2}-\d{2}-\d{2}_", name) is not None
    holds = made and parent == "runs" and dated and name.endswith(hostname)
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"SummaryWriter() wrote to ./{log_dir} ({'created' if made else 'NOT created'}); the notes: "
        "./runs/CURRENT_DATETIME_HOSTNAME",
    )


def check_notes_import_line(device):
    module = importlib.import_module("torch.utils.tensorboard")
    misspelled = hasattr(module, "SummmaryWritter")  # the notes' 000/001 import line
    try:
        exec("from torch.utils.tensorboard import SummmaryWritter", {})
        imported = True
    except ImportError:
        imported = False
    assert imported == misspelled
    return judge_import_line(imported, hasattr(module, "SummaryWriter"))


def judge_import_line(notes_line_imports: bool, right_name_imports: bool) -> Finding:
    """The technique: SummaryWriter imports from torch.utils.tensorboard (004's line). 000's and
    001's misspelled line (`SummmaryWritter`) is their snippets' erratum, listed by the snippets
    check: reported here, not listed again."""
    return Finding(
        Verdict.HOLDS if right_name_imports else Verdict.FAILS,
        f"torch.utils.tensorboard.SummaryWriter {'imports' if right_name_imports else 'does NOT import'}; "
        f"000/001's `SummmaryWritter` {'imports' if notes_line_imports else 'raises ImportError'}",
    )


def check_image_graph_embedding(device):
    """001's three other calls, in its order (add_image, add_graph, close, then add_embedding), on
    small stand-ins for its MNIST images and model, each read back: add_image's PNG holds the
    grid's pixels (x·255 truncated to uint8), add_graph's GraphDef holds the module's ops, add_embedding's
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
        # In the notes' order: close() comes before add_embedding, which reopens the writer.
        writer.add_image("batch_images", grid)
        writer.add_graph(net, torch.randn(2, 4, generator=g))
        writer.close()
        writer.add_embedding(features, metadata=labels, label_img=images.unsqueeze(1))
        writer.close()  # the notes never close it again; here the files must be complete to be read
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


def _sprite(images, label_img):
    """The sprite add_embedding writes for `label_img`, as grey levels (int)."""
    from PIL import Image
    from torch.utils.tensorboard import SummaryWriter

    with tempfile.TemporaryDirectory() as tmp:
        writer = SummaryWriter(tmp)
        writer.add_embedding(images.reshape(len(images), -1), label_img=label_img)
        writer.close()
        with Image.open(os.path.join(tmp, "00000", "default", "sprite.png")) as png:
            return np.asarray(png.convert("L")).astype(int)


def check_embedding_sprite(device):
    """001's label_img: `images` come from `trainset.data` (28·28 images: an MNIST-family dataset,
    whose `.data` is a uint8 tensor of grey levels 0..255). Twelve such 8×8 uint8 images, as
    label_img=images.unsqueeze(1), against the sprite tiled by hand; and the same images as
    float in [0, 1] (images.float() / 255) beside them."""
    import torch

    g = torch.Generator().manual_seed(1)
    images = (torch.rand(12, 8, 8, generator=g) * 256).to(torch.uint8)
    want = np.zeros((32, 32), dtype=int)  # 4×4 tiles of 8×8, row-major, the last 4 empty
    for i, image in enumerate(images.numpy()):
        r, c = divmod(i, 4)
        want[8 * r : 8 * r + 8, 8 * c : 8 * c + 8] = image
    as_written = _sprite(images, images.unsqueeze(1))
    as_float = _sprite(images, images.unsqueeze(1).float() / 255)
    off = lambda got: int(np.abs(got - want).max()) if got.shape == want.shape else 256  # noqa: E731
    saturated = float((as_written[want > 0] == 255).mean())
    return judge_embedding_sprite(off(as_written), off(as_float), saturated)


def judge_embedding_sprite(uint8_off: int, float_off: int, saturated: float) -> Finding:
    """The notes' thumbnails show their images: the sprite of uint8 label images must hold their
    grey levels, to one level (x/255·255 in float32 may truncate one level down). Fails where it
    does not (tensorboard scales every label image by 255, so a uint8 level ≥ 1 saturates); the
    float form is reported as the fix."""
    holds = uint8_off <= 1
    return Finding(
        Verdict.HOLDS if holds else Verdict.FAILS,
        f"label_img as uint8 (as trainset.data holds MNIST): sprite off the images by {uint8_off} grey levels"
        + (
            ""
            if holds
            else f", {saturated:.0%} of the non-zero pixels saturated to 255 (thresholded thumbnails)"
        )
        + f"; as images.float() / 255: off by {float_off}"
        + (" (use that)" if not holds and float_off <= 1 else ""),
    )


CASE = Case(
    id="misc.tensorboard",
    tier=3,
    claim="SummaryWriter.add_scalar logs scalars; different SummaryWriter objects with the same name (tag) "
    "and log_dir land in one chart; add_image, add_graph and add_embedding write what they say.",
    source="004 Tensorboard 可视化, 000/001 Visualization",
    requires=("module:tensorboard",),
    claims=(
        Claim(
            "one_chart",
            "不同的summary 对象，只要name一样，就可以放到同一个图里",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="two SummaryWriters writing the same tags to one log_dir (the notes' code) land in one "
            "run, one chart per tag holding both writers' points",
        ),
        Claim(
            "default_log_dir",
            "# Writer will output to ./runs/ directory by default … "
            "# 定义一个summary 对象 runs/CURRENT_DATETIME_HOSTNAME",
            "004",
            ClaimKind.BEHAVIOUR,
            reading="SummaryWriter() with no log_dir writes to ./runs/<date>_<time>_<hostname>",
        ),
        Claim("import_path", "from torch.utils.tensorboard import SummaryWriter", "004", ClaimKind.BEHAVIOUR),
        Claim(
            "image_graph_embedding",
            "writer.add_image('batch_images', img_grid) # show the images in a batch … "
            "writer.add_graph(net, input) … "
            "writer.add_embedding(features, metadata=class_labels, label_img=images.unsqueeze(1))",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="add_image stores the image grid, add_graph the model's graph, and add_embedding (called "
            "after close(), as in the notes) the features, their labels and a sprite of the images; checked "
            "on a random grid, a Linear+ReLU and 12 random 8×8 images, not the notes' MNIST and model",
        ),
        Claim(
            "embedding_sprite",
            "images, labels = select_n_random(trainset.data, trainset.targets) … "
            "label_img=images.unsqueeze(1))",
            "001",
            ClaimKind.BEHAVIOUR,
            reading="the projector's thumbnails (label_img) show the images taken from trainset.data, which "
            "for a 28·28 (MNIST-family) dataset is a uint8 tensor of grey levels",
        ),
    ),
    checks={
        "two_writers_one_chart": Check(check_two_writers_one_chart, devices=("cpu",), claim="one_chart"),
        "default_log_dir": Check(check_default_log_dir, devices=("cpu",), claim="default_log_dir"),
        "notes_import_line": Check(check_notes_import_line, devices=("cpu",), claim="import_path"),
        "image_graph_embedding": Check(
            check_image_graph_embedding, devices=("cpu",), claim="image_graph_embedding"
        ),
        "embedding_sprite": Check(check_embedding_sprite, devices=("cpu",), claim="embedding_sprite"),
    },
)
