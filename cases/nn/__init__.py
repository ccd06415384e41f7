"""The `nn.*` catalogue IDs, one module each."""
