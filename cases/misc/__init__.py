"""The `misc.*` catalogue IDs, one module each."""
