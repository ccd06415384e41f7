"""The `data.*` catalogue IDs, one module each."""
