"""A run of the suite, from its options to its results file: the option values read and checked
(`option_values`), the plan line, progress, ETA and `--time-budget` cap (`progress`), the journal
of finished points (`journal`) and which points a run keeps when cut short (`finished_points`), the
results file written through a temporary file under a lock (`results_file`), the worker process
that takes over after a sticky CUDA error (`isolation`), the torchrun launcher (`launch`) and
untimed work started ahead of the tests that read it (`ahead`)."""
