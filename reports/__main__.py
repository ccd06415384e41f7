"""``python -m reports`` — placeholder until the reports issue lands."""

import sys

sys.exit("reports: not built yet (see the reports issue)")
