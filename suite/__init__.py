"""The pytest modules of the suite: thin glue from `cases/` to pytest and pytest-benchmark."""
