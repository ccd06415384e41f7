"""index.html in a real browser (headless Chromium): the page loads, every image decodes, and
there is one section per catalogue ID. The screenshot is kept in results/browser/ (a CI
artifact) for a person to look at."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.contract import catalogue
from reports import build
from tests import paths

REAL = paths.DATA / "distance_cpu_run1.json"
ARTIFACTS = paths.ROOT / "results" / "browser"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.integration

# Runs on window load (after every data-URI image has decoded or failed) and writes its findings
# into the DOM, which --dump-dom prints. Added to a copy of the page only: the report itself
# carries no script, and its Content-Security-Policy would block this one.
PROBE = """<script>window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var r = {loaded: document.readyState, images: imgs.length,
           decoded: imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
           sections: document.querySelectorAll("section.case").length};
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
});</script>"""


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
def test_report_renders_in_chromium(tmp_path):
    index = build.build([REAL], tmp_path / "out")
    page = index.read_text(encoding="utf-8")
    probe = tmp_path / "out" / "probe.html"
    probe.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace(
            "</body>", PROBE + "</body>"
        ),
        encoding="utf-8",
    )
    done = chromium("--virtual-time-budget=10000", "--dump-dom", probe.as_uri(), profile=tmp_path / "profile")
    found = re.search(r'<pre id="probe">([^<]*)</pre>', done.stdout)
    assert found, f"no probe result in the dumped DOM; chromium said: {done.stderr[-500:]}"
    result = json.loads(found.group(1))
    assert result["loaded"] == "complete"
    assert result["images"] == page.count("data:image/png;base64,") >= 2
    assert result["decoded"] == result["images"], result
    assert result["sections"] == len(catalogue.load())

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "index.png"
    shot.unlink(missing_ok=True)
    chromium(
        "--hide-scrollbars",
        "--window-size=1280,2000",
        f"--screenshot={shot}",
        index.as_uri(),
        profile=tmp_path / "profile",
    )
    assert shot.exists() and shot.stat().st_size > 10_000
    shutil.copy(index, ARTIFACTS / "index.html")
