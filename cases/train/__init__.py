"""The `train.*` catalogue IDs, one module each."""
