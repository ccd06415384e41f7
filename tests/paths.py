"""Where things are, whatever folder a test sits in: the repository root, tests/data, and the
results documents the repository holds."""

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def read_document(path: Path) -> dict:
    """A JSON document as written, gzip-compressed or not."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


# Every results document the repository holds (tests/data/, reports/reference/): a JSON file with
# pytest-benchmark's "benchmarks", of any schema version.
COMMITTED_RESULTS = sorted(
    p
    for folder in (DATA, ROOT / "reports" / "reference")
    for p in [*folder.rglob("*.json"), *folder.rglob("*.json.gz")]
    if "benchmarks" in read_document(p)
)
