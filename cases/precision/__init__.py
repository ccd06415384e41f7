"""The `precision.*` catalogue IDs, one module each."""
