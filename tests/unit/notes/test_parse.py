"""notes.parse: every fenced block of the notes extracted, its language and its class read from its
text."""

from __future__ import annotations

from pathlib import Path

import pytest

from notes import parse

SNIPPETS_FOUND = parse.all_snippets()
PYTHON = [s for s in SNIPPETS_FOUND if s.is_python]


# ---- extraction and the map ---------------------------------------------------------------------


def test_the_notes_are_the_shared_notes_copy():
    names = [p.name for p in parse.note_files()]
    assert [n[:3] for n in names] == ["000", "001", "002", "003", "004"], names
    shared = Path(parse.REPO_ROOT).parent / "shared" / "notes"
    if shared.is_dir():  # a workspace with the notes beside the repository: the copy is verbatim
        for path in parse.note_files():
            assert path.read_bytes() == (shared / path.name).read_bytes(), (
                f"{path.name} differs from {shared}"
            )


def test_every_fenced_block_is_extracted():
    for path in parse.note_files():
        fences = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if parse._FENCE.match(line))
        assert fences == 2 * len(parse.extract(path)), f"{path.name}: {fences} fences, unbalanced extraction"
    assert len(SNIPPETS_FOUND) == 116


def test_languages():
    assert parse.language_of("", "data.idx\ndata.rec\n") == "other"  # a file listing parses, but is not code
    assert parse.language_of("", "x = torch.tensor([1, 2, 3])\n") == "python"
    assert parse.language_of("", ">>> a = 1\n") == "pycon"
    assert parse.language_of("bash", "ls\n") == "shell"
    assert parse.language_of("plain", "[\n") == "other"
    assert parse.language_of("py", "oops(\n") == "python"  # tagged python: compiled, and fails


def _snippet(source, tag="python", locator_index=0):
    return parse.Snippet("009_x.txt", locator_index, 10, tag, parse.language_of(tag, source), source)


def test_classes_from_the_text():
    assert (
        parse.class_of_text(_snippet("nansum()\n\n>>> x = np.arange(10.)\n>>> x.sum()\nnan\n"))
        == "transcript"
    )
    assert parse.class_of_text(_snippet("    def reset(self):\n        pass\n")) == "source"
    assert (
        parse.class_of_text(_snippet('def f(p):\n    """x.\n\n    Arguments:\n        p: y\n    """\n'))
        == "source"
    )
    sig = (
        "DataLoader(dataset, batch_size=1, ..., *, prefetch_factor=2,\n           persistent_workers=False)\n"
    )
    assert parse.class_of_text(_snippet(sig)) == "signature"
    assert parse.class_of_text(_snippet("pack(header, s) -> s\nunpack(s) -> header, s\n")) == "signature"
    assert (
        parse.class_of_text(_snippet("F.grid_sample(input, grid, mode='bilinear')\n", "plain")) == "signature"
    )
    assert parse.class_of_text(_snippet("a[0::2] //\npe[:,0::2]//从0\n")) == "pseudo"
    assert parse.class_of_text(_snippet('{"a": [1, 2],..,}\n')) == "text"
    # Code: a call of bare names is a call, not a signature; one `//` slip among code is code's typo.
    assert parse.class_of_text(_snippet("model.apply(init_weight)\n")) == "code"
    assert parse.class_of_text(_snippet("class A(nn.Module)://Seq\n  pass\nx = 1\n")) == "code"


# ---- a snippet read by its identity ---------------------------------------------------------------


def test_a_snippet_is_found_by_its_locator_as_written():
    layernorm = parse.snippet("004#7")
    assert layernorm.first_line == "# step by step LayerNorm"  # a quoted block: its "> " markers gone
    assert 'class LayerNorm(nn.Module):\n    "Construct' in layernorm.source


def test_a_snippet_whose_first_line_changed_is_refused(monkeypatch):
    edited = [
        s if s.locator != "004#15" else parse.Snippet(s.file, s.index, s.line, s.tag, s.language, "y = 1\n")
        for s in parse.all_snippets()
    ]
    monkeypatch.setattr(parse, "all_snippets", lambda: tuple(edited))
    with pytest.raises(ValueError, match="the notes changed"):
        parse.snippet("004#15")
    with pytest.raises(KeyError):
        parse.snippet("004#999")


def test_snippet_text_is_the_whole_snippet_or_the_lines_between_two_it_names():
    whole = parse.snippet_text("001#19")
    assert whole == parse.snippet("001#19").source
    part = parse.snippet_text("001#19", "def init_weights(m):", "net.appply(")
    assert part.startswith("def init_weights(m):\n\tif isinstance(m, nn.Linear):")  # its tab indent kept
    assert part.endswith("net.appply(init_weights)\n") and part in whole
    assert (
        parse.snippet_text("001#1", "self.out = ", "self.out = ")
        == "self.out = nn.Linear(input_size, output_size)\n"
    )
    with pytest.raises(ValueError, match="no line starting 'model.fit"):
        parse.snippet_text("001#19", last="model.fit(")
