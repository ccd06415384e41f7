"""The documentation: README.md a short guide (at most 12 kB) whose Quick start keeps the two
commands `.ci/run` reads, nothing in the repository pointing outside it, and every page under
docs/ listed in mkdocs.yml's nav (the strict build, run by the test command, finds dead links)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests import paths

ROOT = paths.ROOT
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"
README_MAX_BYTES = 12 * 1024
IMAGE_MAX_BYTES = 150 * 1024

# A path up out of the repository into the workspace it was made in: spelled in two pieces so that
# this file does not match itself.
OUTSIDE = ".." + "/shared"
# Byte-for-byte copies of a file kept outside the repository (test_cases_declared.py holds the
# catalogue equal to it where the workspace has it): they are changed where they come from.
VERBATIM_COPIES = {"cases/CATALOG.md"}


def quick_start_commands() -> list[str]:
    """The lines of the Quick start's bash block, read as .ci/run reads them (its awk)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Quick start"))
    fence = next(i for i in range(start, len(lines)) if lines[i].startswith("```bash"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    return lines[fence + 1 : end]


def nav_pages(text: str) -> list[str]:
    """The pages mkdocs.yml's nav names (`- page.md` or `- Title: page.md`, at any depth): a small
    reader of the one block, so the test needs no YAML library."""
    pages, in_nav = [], False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"^nav:\s*$", line):
            in_nav = True
            continue
        if in_nav and not line.startswith((" ", "-")):
            break  # the next top-level key
        if in_nav:
            entry = re.match(r"^\s*-\s*(?:[^:]+:\s*)?(\S+\.md)\s*$", line)
            if entry:
                pages.append(entry.group(1))
    return pages


def repository_files() -> list[str]:
    """Tracked files and those about to be (untracked, not ignored), as git lists them."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the repository's files cannot be listed")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return sorted({name.decode() for name in listed.split(b"\0") if name})


def test_the_readme_is_a_short_guide():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes, over {README_MAX_BYTES}: move it to docs/"


def test_the_quick_start_keeps_the_two_commands_ci_runs():
    commands = quick_start_commands()
    assert len(commands) == 2, commands
    first, test_command = commands
    assert first.startswith("python -m pip install -c constraints.txt -e . && python -m pytest suite")
    assert "python -m pytest -n auto" in test_command
    assert test_command.endswith('python -m mkdocs build --strict --site-dir "$(mktemp -d)"'), test_command
    # The extras CI needs: the docs site, and submitit so the fan-out's local path runs in CI.
    assert '".[tensorboard,lint,test,docs,fanout]"' in test_command


def test_the_readmes_links_into_docs_exist():
    targets = re.findall(r"\]\((docs/[^)#\s]+)", README.read_text(encoding="utf-8"))
    assert targets, "the README links no page of docs/"
    missing = sorted({t for t in targets if not (ROOT / t).is_file()})
    assert missing == [], f"README.md links to missing files: {missing}"


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = nav_pages(MKDOCS_YML.read_text(encoding="utf-8"))
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert pages, "no page under docs/"
    assert sorted(set(pages) - set(nav)) == [], "pages under docs/ missing from mkdocs.yml's nav"
    assert sorted(set(nav) - set(pages)) == [], "mkdocs.yml's nav names pages that do not exist"
    assert len(nav) == len(set(nav)), "a page is listed twice in the nav"


def test_the_nav_reader_reads_nested_sections():
    text = "site_name: x\nnav:\n  - Home: index.md\n  - Part:\n      - a.md\n      - B: sub/b.md\ntheme: m\n"
    assert nav_pages(text) == ["index.md", "a.md", "sub/b.md"]


def test_the_docs_images_are_small():
    images = [p for p in DOCS.rglob("*") if p.suffix.lower() in {".png", ".jpg", ".jpeg", ".gif", ".svg"}]
    big = sorted(
        f"{p.relative_to(ROOT)}: {p.stat().st_size} bytes"
        for p in images
        if p.stat().st_size > IMAGE_MAX_BYTES
    )
    assert big == [], f"images over {IMAGE_MAX_BYTES} bytes: {big}"


def test_nothing_points_outside_the_repository():
    offenders = []
    for name in repository_files():
        path = ROOT / name
        if name in VERBATIM_COPIES or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if OUTSIDE in line:
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == [], "files pointing outside the repository:\n" + "\n".join(offenders)
