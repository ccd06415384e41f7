"""The `autograd.*` catalogue IDs, one module each."""
