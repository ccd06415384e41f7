"""The `optim.*` catalogue IDs, one module each."""
