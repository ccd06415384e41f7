"""One point of a case, measured: one variant checked against its oracle and timed
(`variant_benchmark`, what `test_check` and `test_benchmark` run), two ways checked and timed side
by side (`pair_benchmark`, what `test_pair` runs), and the markers, skips and clocks a point's
requirements give it (`marks`). The top of the harness: it uses every room below it."""
