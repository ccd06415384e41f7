"""How things are measured: timing wrappers, peak memory, errors, requirements, machine info.

Plain Python (never imports pytest), shared by the pytest glue in `suite/` and by workers that
run outside pytest (the distributed cases under torchrun).
"""
