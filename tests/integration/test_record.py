"""The results contract on a real run (harness/contract/record.py): every suite test's outcome is in the
results, a report and the gate build with `torch` and `cases` unimportable, and a file is judged by the
rule it recorded."""

import json
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from harness.contract import catalogue, record, rules
from tests import paths
from tests.launcher import PYTEST

# The module's shared run of the suite (small_run) is made once: under `-n auto --dist loadgroup` (the
# test command) every test of this module goes to the same worker.
pytestmark = pytest.mark.xdist_group("test_record")

ROOT = paths.ROOT


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A real run of a few cases (checks, benchmarks, rule checks, torch.compile) with its JUnit
    XML, the independent count of what pytest ran."""
    out = tmp_path_factory.mktemp("run")
    run = subprocess.run(
        [
            *PYTEST,
            "suite",
            "-q",
            "--device",
            "cpu",
            "-k",
            "jit.script_trace or onehot.encode or distance.pairwise and n256",
            f"--benchmark-json={out / 'bench.json'}",
            f"--junitxml={out / 'junit.xml'}",
            "--benchmark-max-time=0.01",
            "--benchmark-min-rounds=5",
            "--benchmark-warmup=off",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return out


@pytest.mark.integration
def test_every_suite_test_outcome_is_in_the_results(small_run):
    doc = json.loads((small_run / "bench.json").read_text())
    junit = list(ET.parse(small_run / "junit.xml").getroot().iter("testcase"))
    assert len(doc["outcomes"]) == len(junit) > 30
    nodeids = {o["nodeid"] for o in doc["outcomes"]}
    assert len(nodeids) == len(doc["outcomes"]), "one outcome per test"
    compile_outcomes = [o for o in doc["outcomes"] if "compile" in o.get("check", "")]
    assert compile_outcomes and all(o["case"] == "jit.script_trace" for o in compile_outcomes)
    assert any(o.get("finding") for o in compile_outcomes if o["outcome"] == "passed")
    assert doc["suite"]["schema_version"] == record.SCHEMA_VERSION and len(doc["cases"]) == len(
        catalogue.load()
    )


BLOCKED = textwrap.dedent("""
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in ('torch', 'cases'):
                raise ImportError(f'{name} is blocked: reports must read only the results JSON')
    sys.meta_path.insert(0, Block())
    from reports.__main__ import main
    out = sys.argv[1]
    code = main(['build', out + '/bench.json', '--out', out + '/report'])
    assert code == 0, code
    # Against itself a run never regresses; its unstable pairs (a tiny run) are accepted as unjudged.
    run = out + '/bench.json'
    code = main(['gate', '--baseline', run, '--current', run, '--allow-unjudged'])
    assert code == 0, code
    assert not {m for m in sys.modules if m.split('.')[0] in ('torch', 'cases')}
    print('built and gated without torch or cases')
""")


@pytest.mark.integration
def test_report_and_gate_need_neither_torch_nor_cases(small_run):
    run = subprocess.run(
        [sys.executable, "-c", BLOCKED, str(small_run)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    page = (small_run / "report" / "index.html").read_text()
    ids = len(catalogue.load())
    assert f"(= {ids} IDs)" in page and page.count('<section class="case"') == ids


@pytest.mark.integration
def test_a_file_is_judged_by_the_rule_it_recorded(small_run, tmp_path):
    """Change the recorded rule of distance.pairwise: the verdict follows the file, not the code."""
    from reports import build

    doc = json.loads((small_run / "bench.json").read_text())
    doc["cases"]["distance.pairwise"]["rule"] = record.rule_to_data(
        rules.Faster(fast="broadcast", slow="matmul", claim="faster")
    )  # the naive way "faster", deciding the notes' speed claim: false on every machine
    path = tmp_path / "rule.json"
    path.write_text(json.dumps(doc))
    build.build([small_run / "bench.json"], tmp_path / "as_run")
    build.build([path], tmp_path / "changed")

    def verdict(folder):
        page = (folder / "index.html").read_text()
        section = page[page.index('id="distance.pairwise"') :]
        section = section[: section.index("</section>")]
        return re.search(
            r'class="badge"[^>]*>(holds|fails|depends|not measured|could not judge)</span>', section
        ).group(1)

    # Quiet, the as-run file says holds and the swapped rule fails. On a busy machine a clear gain
    # still holds, while the swapped rule's "slower" cannot be told from the neighbours' share
    # (could not judge); rounds too noisy for either leave both unsure. Never a verdict the file
    # does not support: the swapped rule never holds.
    as_run = verdict(tmp_path / "as_run")
    assert as_run in ("holds", "could not judge")
    allowed = {"holds": ("fails", "could not judge"), "could not judge": ("could not judge",)}[as_run]
    assert verdict(tmp_path / "changed") in allowed
