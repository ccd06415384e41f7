"""Where things are, whatever folder a test sits in: the repository root and tests/data."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
