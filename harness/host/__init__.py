"""The host process and its machine while a run goes: is the machine quiet (`load`: a spinner per
core, the other processes' share of the cores over a stretch of work, CPU pressure, load average),
SIGINT/SIGTERM held where a step must not be cut (`signals`), and the host allocator's thresholds
pinned and recorded (`allocator`)."""
