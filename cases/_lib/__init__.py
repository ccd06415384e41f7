"""Helpers shared by the cases (not cases themselves)."""
