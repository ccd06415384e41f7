"""How things are measured: plain Python (never imports pytest), shared by the pytest glue in
`suite/` and by workers that run outside pytest (the distributed cases under torchrun).

Rooms, each importing only the rooms before it (tests/unit/properties/test_layers.py guards the order):
`contract` (the results' records and rules; torch-free, the only room `reports/` reads), `host`
(the process and its machine's load, signals, allocator), `measure` (the device, clocks, calls,
rounds), `machine` (what the machine is and can do), `run` (options, journal, results file,
progress, isolation, launch), `point` (one variant or one pair at one point, measured).
"""
