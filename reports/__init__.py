"""What the numbers say: results JSON → tidy CSV → PNG plots → one HTML page, and the CI gate.

Plain Python: reads pytest-benchmark JSON files only (never imports pytest), so it works on
results brought back from any machine.
"""
