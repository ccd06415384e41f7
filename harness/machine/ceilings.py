"""What this machine can do at best: GEMM FLOP/s per precision and copy bandwidth, measured here.

A speedup says "faster than the naive way"; a roofline fraction says how close a variant comes to
what the hardware delivers. Datasheet peaks are not used: a 2-core slice of a shared Xeon or a
power-capped GPU never reaches them, and the fraction of an unreachable number misleads. Each
ceiling is the *best* rate seen over a few repetitions (the ceiling is what is attainable, so the
fastest repetition is the estimate; noise only ever slows a run down).

Shape of the result (stored at ``machine_info["torch"]["ceilings"]``; reports read it as is)::

    {"cpu":  {"fp32_flops", "bf16_flops", "copy_bytes_per_s"},
     "cuda": {"fp32_flops", "tf32_flops", "bf16_flops", "fp16_flops", "copy_bytes_per_s"}}

FLOP/s count 2·n³ per n×n×n GEMM; copy bandwidth counts bytes read plus bytes written (2× the
buffer), the convention of STREAM's copy and of the cases' ``bytes_moved``. A device that is not
present (or not selected) has no key. Cost: about 3 s on 2 CPU cores (under 5 s loaded), about 5 s on an H200.
"""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Callable

import torch

from harness.measure import device as devices

# CPU GEMM sizes tried, smallest first: the best rate over them is kept (small sizes win where
# a large B no longer fits the 2 MiB L2 slice; large ones where threading overhead dominates).
CPU_GEMM_SIZES = (512, 1024, 2048)
# The copy buffer must be far larger than the last-level cache, or the "bandwidth" is the
# cache's. 256 MiB (×2 with the destination) exceeds any L3 slice a few cores get; on a GPU,
# 1 GiB is 20× an H100/H200 L2 (50 MiB).
CPU_COPY_BYTES = 256 * 2**20
CUDA_COPY_BYTES = 2**30
CUDA_GEMM_N = 8192  # 1.1 TFLOP per call: 2-20 ms on an H200 depending on precision
CUDA_BATCH = 5  # calls between one pair of CUDA events, so the launch gap is amortised

_cache: dict[str, tuple[dict, dict]] = {}


def measured(device: str, budget_s: float | None = None) -> tuple[dict, dict]:
    """Ceilings of `device` ("cpu" or "cuda") and how they were measured, once per process.

    A pytest session is one process, so this is "once per session per machine".
    """
    kind = torch.device(device).type
    if kind not in _cache:
        if kind == "cpu":
            _cache[kind] = _measure_cpu(budget_s or 2.5)
        elif kind == "cuda":
            _cache[kind] = _measure_cuda(budget_s or 8.0)
        else:
            raise ValueError(f"no ceilings for device type {kind!r}")
    return _cache[kind]


def roofline(
    flops: float | None,
    bytes_moved: float | None,
    seconds: float,
    peak_flops: float | None,
    bandwidth: float | None,
) -> dict:
    """Achieved FLOP/s and B/s of one call lasting `seconds`, and its fraction of the roofline.

    The roofline bound is min(peak_flops, intensity × bandwidth), intensity = flops / bytes;
    with only one side of the cost model known, the fraction is of that side's ceiling.
    Keys are absent where the inputs to compute them are.
    """
    out: dict = {}
    if flops:
        out["achieved_flops"] = flops / seconds
    if bytes_moved:
        out["achieved_bytes_per_s"] = bytes_moved / seconds
    if flops and bytes_moved and peak_flops and bandwidth:
        out["arithmetic_intensity"] = flops / bytes_moved
        out["roofline_fraction"] = out["achieved_flops"] / min(peak_flops, flops / bytes_moved * bandwidth)
    elif flops and peak_flops:
        out["roofline_fraction"] = out["achieved_flops"] / peak_flops
    elif bytes_moved and bandwidth:
        out["roofline_fraction"] = out["achieved_bytes_per_s"] / bandwidth
    return out


def roofline_info(
    device: str, dtype: torch.dtype, flops, bytes_moved, median_s: float, device_ceilings
) -> dict:
    """A timed point's achieved FLOP/s and B/s and its roofline fraction against this machine's
    measured `device_ceilings` (`measured(device)[0]`), with the key of the GEMM ceiling used."""
    if not device_ceilings:
        return {}
    key = gemm_key(device, dtype)
    info = {"ceiling_key": key}
    info.update(
        roofline(
            flops, bytes_moved, median_s, device_ceilings.get(key), device_ceilings.get("copy_bytes_per_s")
        )
    )
    return info


def above_ceiling_warning(info: dict) -> list[str]:
    """A point faster than the machine's ceiling means the ceiling is wrong (measured while the
    machine was busy) or the cost model overcounts: either way the fraction cannot be used."""
    fraction = info.get("roofline_fraction")
    if fraction is not None and fraction > 1.05:
        return [
            f"above ceiling: {fraction:.2f}x the measured {info.get('ceiling_key')} roofline; the "
            f"ceiling was measured under load or the cost model overcounts"
        ]
    return []


def gemm_key(device: str, dtype: torch.dtype) -> str | None:
    """Which ceiling bounds a GEMM of `dtype` on `device` now (fp32 on CUDA: TF32 if allowed)."""
    kind = torch.device(device).type
    if dtype == torch.float32:
        if kind == "cuda" and _tf32_in_force():
            return "tf32_flops"
        return "fp32_flops"
    return {torch.bfloat16: "bf16_flops", torch.float16: "fp16_flops"}.get(dtype)


def _tf32_in_force() -> bool:
    try:
        return bool(torch.backends.cuda.matmul.allow_tf32)
    except RuntimeError:  # the new fp32_precision API was used: ask it instead
        return getattr(torch.backends.cuda.matmul, "fp32_precision", "ieee") == "tf32"


# ---- CPU --------------------------------------------------------------------------------------


def _best_seconds(fn: Callable[[], object], budget_s: float, min_reps: int = 2, max_reps: int = 200) -> float:
    fn()  # warm-up: page faults, oneDNN/MKL kernel selection, thread pool start
    best, reps, start = float("inf"), 0, time.perf_counter()
    while reps < min_reps or (time.perf_counter() - start < budget_s and reps < max_reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        reps += 1
    return best


def _cpu_gemm_rate(dtype: torch.dtype, budget_s: float, sizes=CPU_GEMM_SIZES) -> tuple[float, int]:
    deadline = time.perf_counter() + budget_s
    best_rate, best_n, last_seconds = 0.0, 0, 0.0
    g = torch.Generator().manual_seed(0)
    for n in sizes:
        left = deadline - time.perf_counter()
        # Doubling n costs 8× per call; a size whose warm-up and two repetitions would overrun
        # the budget is not tried (a loaded machine must not stretch the session's start).
        if left <= 0 or 3 * 8 * last_seconds > left:
            break
        a = torch.randn(n, n, generator=g).to(dtype)
        b = torch.randn(n, n, generator=g).to(dtype)
        c = torch.empty(n, n, dtype=dtype)
        seconds = _best_seconds(lambda: torch.mm(a, b, out=c), left / 2)
        rate, last_seconds = 2 * n**3 / seconds, seconds
        if rate > best_rate:
            best_rate, best_n = rate, n
    return best_rate, best_n


def _cpu_gemm_ceiling(dtype: torch.dtype, budget_s: float) -> tuple[float, dict]:
    """The rate with the threads in force, unless contention shows, then threads × one thread's.

    A multi-threaded GEMM waits at barriers for its slowest thread: on a shared machine one
    descheduled thread stalls all of them, and the 2-thread rate drops 10-20× (measured here
    under load: 13 GFLOP/s with 2 threads, 166 with 1). More threads never make a large GEMM
    slower on an idle machine, so a multi-thread rate below the one-thread rate is contention;
    the ceiling is then threads × one thread's rate (perfect scaling, an upper bound; on this
    CPU's AMX bf16 path two threads do not scale, so there it overestimates). Both figures and
    the choice are kept in the details.
    """
    threads = torch.get_num_threads()
    multi, n = _cpu_gemm_rate(dtype, budget_s * 0.6)
    single = 0.0
    if threads > 1:
        torch.set_num_threads(1)
        try:
            single, _ = _cpu_gemm_rate(dtype, budget_s * 0.4, sizes=CPU_GEMM_SIZES[:1])
        finally:
            torch.set_num_threads(threads)
    contended = multi < 0.8 * single  # 20%: equal rates within noise are not contention
    ceiling = threads * single if contended else multi
    return ceiling, {"threads_rate": multi, "threads_n": n, "one_thread_rate": single, "contended": contended}


def _measure_cpu(budget_s: float) -> tuple[dict, dict]:
    start = time.perf_counter()
    fp32, fp32_detail = _cpu_gemm_ceiling(torch.float32, budget_s * 0.4)
    bf16, bf16_detail = _cpu_gemm_ceiling(torch.bfloat16, budget_s * 0.3)
    src = torch.ones(CPU_COPY_BYTES // 4)
    dst = torch.empty_like(src)
    copy_s = _best_seconds(functools.partial(dst.copy_, src), budget_s * 0.2)
    del src, dst
    ceilings = {"fp32_flops": fp32, "bf16_flops": bf16, "copy_bytes_per_s": 2 * CPU_COPY_BYTES / copy_s}
    detail = {
        "threads": torch.get_num_threads(),
        "gemm": {"fp32": fp32_detail, "bf16": bf16_detail},
        "copy_buffer_bytes": CPU_COPY_BYTES,
        "seconds": round(time.perf_counter() - start, 3),
        "method": "best of repeated torch.mm(n×n) (threads in force; threads × one thread's rate "
        "when contended) and Tensor.copy_, perf_counter",
    }
    return ceilings, detail


# ---- CUDA -------------------------------------------------------------------------------------


@contextlib.contextmanager
def cuda_tf32(enabled: bool):
    """TF32 for fp32 matmuls on or off inside the block, the previous state restored exactly.

    Through the legacy flag, which every torch this suite supports understands; the new
    ``fp32_precision`` string it implicitly changes ("none" → "ieee") is put back too, so the
    precision settings recorded in machine_info are those the run really had. If the new API
    is already in use (reading the legacy flag raises), only the new API is touched.
    """
    matmul = torch.backends.cuda.matmul
    new_api = hasattr(matmul, "fp32_precision")
    saved_new = matmul.fp32_precision if new_api else None
    try:
        saved_legacy = matmul.allow_tf32
    except RuntimeError:
        saved_legacy = None
    try:
        if saved_legacy is not None:
            matmul.allow_tf32 = enabled
        else:
            matmul.fp32_precision = "tf32" if enabled else "ieee"
        yield
    finally:
        if saved_legacy is not None:
            matmul.allow_tf32 = saved_legacy
        if new_api:
            try:
                matmul.fp32_precision = saved_new
            except (RuntimeError, ValueError):
                pass  # a torch that rejects its own previous value: legacy restore stands


def _cuda_best_seconds(
    fn: Callable[[], object], budget_s: float, gpu: devices.Device, min_reps: int = 3
) -> float:
    """Best per-call seconds from the device's events around batches of `CUDA_BATCH` back-to-back
    calls (its clock, as every timing of the suite on that device)."""
    fn()
    gpu.synchronize()
    start_ev, end_ev = gpu.event(), gpu.event()
    best, reps, t0 = float("inf"), 0, time.perf_counter()
    while reps < min_reps or (time.perf_counter() - t0 < budget_s and reps < 100):
        start_ev.record(gpu.current_stream())
        for _ in range(CUDA_BATCH):
            fn()
        end_ev.record(gpu.current_stream())
        end_ev.synchronize()
        best = min(best, start_ev.elapsed_time(end_ev) / 1e3 / CUDA_BATCH)
        reps += 1
    return best


def _measure_cuda(budget_s: float) -> tuple[dict, dict]:
    start = time.perf_counter()
    gpu = devices.current_cuda()
    device = gpu.torch_device
    n, ceilings = CUDA_GEMM_N, {}
    g = torch.Generator(device=device).manual_seed(0)
    share = budget_s * 0.18
    with gpu.current():
        for key, dtype, tf32 in (
            ("fp32_flops", torch.float32, False),
            ("tf32_flops", torch.float32, True),
            ("bf16_flops", torch.bfloat16, False),
            ("fp16_flops", torch.float16, False),
        ):
            a = torch.randn(n, n, device=device, generator=g).to(dtype)
            b = torch.randn(n, n, device=device, generator=g).to(dtype)
            c = torch.empty(n, n, device=device, dtype=dtype)
            with cuda_tf32(tf32):
                seconds = _cuda_best_seconds(functools.partial(torch.mm, a, b, out=c), share, gpu)
            ceilings[key] = 2 * n**3 / seconds
            del a, b, c
        src = torch.ones(CUDA_COPY_BYTES // 4, device=device)
        dst = torch.empty_like(src)
        seconds = _cuda_best_seconds(functools.partial(dst.copy_, src), share, gpu)
        ceilings["copy_bytes_per_s"] = 2 * CUDA_COPY_BYTES / seconds
        del src, dst
        gpu.release_cached()
    detail = {
        "device_name": gpu.name(),
        "gemm_n": n,
        "copy_buffer_bytes": CUDA_COPY_BYTES,
        "seconds": round(time.perf_counter() - start, 3),
        "method": f"best of CUDA-event-timed batches of {CUDA_BATCH} torch.mm(n×n) / Tensor.copy_",
    }
    return ceilings, detail
