"""How a call is measured. The package holds the device interface (`device`: synchronise, the
device's clock, peak memory; CUDA, the host, a fake for tests), how a call is timed in each mode
and the clocks' self-checks (`timing`), two ways timed in alternating rounds (`interleave`),
inputs a call wrote into (`mutation`), a call's hidden host-device synchronisation (`sync_lint`),
a variant's context entered around a block of timed calls (`block_context`): its precision
flags, set and restored (`precision_flags`), or other threads of the process gone idle before its
block (`settle`), and torch.compile of a naive variant (`compiled`). This face holds the calls themselves:

Timing wrappers, peak memory, saved-activation bytes and errors against an oracle.

Why these and not wall-clock around a call: CUDA kernels are queued asynchronously, so a timer
stopped when the Python call returns measures the launch, not the work. Every timed callable made
here ends with the device idle (`synchronized`). Peak memory on CUDA comes from the caching
allocator's statistics; on CPU torch keeps no such statistics, and RSS is off by tens of MiB
(allocator caching, page faults), so the profiler's allocation events are replayed instead: they
see every tensor allocation and free, in order, exactly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from harness.host import allocator, signals
from harness.measure import device as harness_device
from harness.measure import mutation


def synchronize(device: torch.device | str) -> None:
    harness_device.of(device).synchronize()


def synchronized(fn: Callable[[], Any], device: torch.device | str) -> Callable[[], Any]:
    """`fn` followed by a device barrier, so a host timer around the call sees the finished work.
    The harness's own timings use the device's clock instead (harness.measure.device): a barrier after
    every call puts its cost, and the host's, in the figure."""
    if torch.device(device).type != "cuda":
        return fn
    dev = harness_device.of(device)

    def call():
        result = fn()
        dev.synchronize()
        return result

    return call


def peak_memory(fn: Callable[[], Any], device: torch.device | str) -> tuple[Any, int]:
    """Run `fn` once; return its result and the peak bytes it allocated above what was live before.

    The result stays alive until this returns, so an output that is the peak is counted.
    """
    dev = harness_device.of(device)
    if dev.has_allocator_stats():
        dev.synchronize()
        dev.reset_peak_memory()
        before = dev.memory_allocated()
        result = fn()
        dev.synchronize()
        return result, dev.max_memory_allocated() - before
    return _cpu_peak(fn)


@contextlib.contextmanager
def profiled(**kwargs) -> Iterator[Any]:
    """``torch.profiler.profile(**kwargs)`` whose start and stop are held from SIGINT/SIGTERM
    (harness.host.signals): an interrupt raised while the profiler starts or stops leaves its callbacks
    registered (the process then segfaulted at exit, in CI). One that lands in the profiled code
    interrupts it as usual, and the profiler is stopped on the way out."""
    from torch.profiler import profile

    prof = profile(**kwargs)
    started = False
    try:
        with signals.held():  # a held signal is raised on leaving the block: inside the try
            prof.__enter__()
            started = True
        yield prof
    finally:
        if started:
            with signals.held():
                prof.__exit__(None, None, None)


def _cpu_peak(fn):
    from torch.profiler import ProfilerActivity

    with profiled(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    # kineto_results holds the raw allocation events (+bytes on malloc, -bytes on free);
    # the aggregated prof.events() folds allocations into their ops and loses the order.
    events = [
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    ]
    live = peak = 0
    for _, nbytes in sorted(events):
        live += nbytes
        peak = max(peak, live)
    return result, peak


def saved_tensor_bytes(fn: Callable[[], Any], exclude: tuple[torch.Tensor, ...] = ()) -> tuple[Any, int]:
    """Bytes of tensors autograd saves for backward while `fn` runs (activation memory).

    Each storage is counted once (a weight saved by two ops, or a view of an input, is one
    allocation), and the storages of `exclude` (pass the parameters and inputs) are left out:
    they exist whether or not anything is saved. Works on any device.
    """
    excluded = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in excluded and ptr not in seen:
            seen[ptr] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = fn()
    return result, sum(seen.values())


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` says the device (or the host) ran out of memory, so the point is `not
    measured` rather than red: torch's OutOfMemoryError, the allocators' own words, and the CUDA
    libraries' allocation statuses. cuBLAS's handle and workspace come from outside PyTorch's
    caching allocator, so a full device fails there first ("CUDA error: CUBLAS_STATUS_ALLOC_FAILED
    when calling `cublasCreate(handle)`"); cuDNN reports its own allocations as
    CUDNN_STATUS_ALLOC_FAILED and, from cuDNN 9, CUDNN_STATUS_INTERNAL_ERROR_{HOST,DEVICE}_
    ALLOCATION_FAILED. Only these statuses count: CUDNN_STATUS_NOT_SUPPORTED, EXECUTION_FAILED or
    BAD_PARAM are errors of the call, and stay errors."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    if not isinstance(exc, RuntimeError):  # torch.AcceleratorError is a RuntimeError
        return False
    text = str(exc)
    allocation_statuses = (
        "CUBLAS_STATUS_ALLOC_FAILED",
        "CUDNN_STATUS_ALLOC_FAILED",
        "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
        "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        "CUSOLVER_STATUS_ALLOC_FAILED",
        "CUSPARSE_STATUS_ALLOC_FAILED",
    )
    return (
        "out of memory" in text
        or "can't allocate memory" in text
        or "not enough memory" in text
        or any(status in text for status in allocation_statuses)
    )


def free_memory(device: torch.device | str, full: bool = True) -> None:
    """Memory that nothing refers to any more given back: cyclic garbage collected and, on CUDA,
    the allocator's cached blocks released. `full` false collects only the young generations
    (milliseconds; a full collection takes ~0.15 s with torch loaded, at every input group)."""
    gc.collect(2 if full else 1)
    if torch.device(device).type == "cuda":
        harness_device.of(device).release_cached()


def memory_budget(device: torch.device | str) -> int:
    """Bytes a single variant may plan to use: most of a GPU's free memory (nothing else runs
    there), half of the host's available memory (the oracle and the OS need the rest)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        # The cached blocks count: without them an H100 skipped sdpa_math at 64 GiB right after
        # masked_fill had left 48 GiB cached.
        return int(harness_device.CudaDevice(dev).usable_bytes() * 0.9)
    return int(_cpu_available_bytes() * 0.5)


def memory_capacity(device: torch.device | str) -> int | None:
    """The most `memory_budget` could ever give a variant on this machine (an empty device), or
    None where the device is not here to ask (collecting CUDA points on a CPU machine)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        if not harness_device.cuda_available():
            return None
        return int(harness_device.CudaDevice(dev).total_bytes() * 0.9)
    return int(_cpu_total_bytes() * 0.5)


def _cpu_total_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _cpu_available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return _cpu_total_bytes()


@dataclass(frozen=True)
class Error:
    max_abs: float
    max_rel: float  # max |got - truth| / max |truth|: normwise, defined where truth has zeros
    within: bool  # every output tensor inside its bound (and, from `check`, no input changed)
    worst: str  # where the largest excess over the bound sits, for the failure message
    changed_inputs: tuple[str, ...] = ()  # inputs the call wrote into (harness.measure.mutation), by name


# Elements compared at a time: a float64 copy of a chunk of `got`, `truth`, their difference and
# the bound is ~130 MiB, where whole-tensor copies of data.recordio's full size (820 M bytes) were
# ~45 GB and had the kernel kill a run.
COMPARE_CHUNK = 1 << 22


def compare(
    got, truth, rtol: float = 0.0, atol: float = 0.0, *, floor: float = 0.0, norm: float | None = None
) -> Error:
    """Compare a result (tensor or tuple of tensors) with the float64 truth, tensor by tensor.

    Element-wise, torch.testing's bound with the absolute term split in two, an absolute `atol`
    and a `floor` in units of that tensor's largest truth:
    ``|got - truth| <= atol + floor * max|truth| + rtol * |truth|``. With `norm` given, instead:
    ``||got - truth||_2 <= norm * ||truth||_2`` per tensor. NaN in `got` is never within.
    `cases.spec.Tol` documents when to use which; `within_tol` takes one.
    """
    gots, truths = _as_tuple(got), _as_tuple(truth)
    if len(gots) != len(truths):
        raise AssertionError(f"result has {len(gots)} tensors, the oracle {len(truths)}")
    max_abs = max_rel = 0.0
    within, worst, worst_excess = True, "", 0.0
    for i, (g, t) in enumerate(zip(gots, truths)):
        if g.shape != t.shape:
            raise AssertionError(f"output {i}: shape {tuple(g.shape)} != oracle's {tuple(t.shape)}")
        if g.numel() == 0:
            continue
        flat_g, flat_t = g.detach().reshape(-1), t.detach().to(device=g.device).reshape(-1)
        chunks = [
            (k, min(k + COMPARE_CHUNK, flat_g.numel())) for k in range(0, flat_g.numel(), COMPARE_CHUNK)
        ]
        scale = max(flat_t[a:b].to(torch.float64).abs().max().item() for a, b in chunks)
        top_diff = sq_diff = sq_truth = 0.0
        top_ratio, top_at = -math.inf, 0  # the largest excess in units of the bound, and where
        for a, b in chunks:
            g64, t64 = flat_g[a:b].to(torch.float64), flat_t[a:b].to(torch.float64)
            diff = (g64 - t64).abs()
            diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
            top_diff = max(top_diff, diff.max().item())
            if norm is not None:
                sq_diff += float(diff.square().sum().item())
                sq_truth += float(t64.square().sum().item())
                continue
            bound = atol + floor * scale + rtol * t64.abs()
            # Compared in units of the bound at that element, so that outputs of different scales
            # rank fairly; an infinite excess (NaN in got) is always the worst.
            ratio = (diff - bound) / bound.clamp_min(torch.finfo(torch.float64).tiny)
            k = int(ratio.argmax().item())
            if ratio[k].item() > top_ratio:
                top_ratio, top_at = ratio[k].item(), a + k
        max_abs = max(max_abs, top_diff)
        max_rel = max(max_rel, top_diff / scale if scale > 0 else top_diff)
        if norm is not None:
            size, dist = math.sqrt(sq_truth), math.sqrt(sq_diff)
            excess = dist / size - norm if size > 0 else dist - norm
            if excess > 0:
                within = False
                if excess >= worst_excess:
                    worst_excess = excess
                    worst = (
                        f"output {i}: ||got - truth|| = {excess + norm:.3g}*||truth|| "
                        f"(||truth|| = {size:.6g}), bound {norm:.3g}*||truth||"
                    )
            continue
        got_at, truth_at = float(flat_g[top_at].item()), float(flat_t[top_at].item())
        bound_at = atol + floor * scale + rtol * abs(truth_at)
        excess_at = abs(got_at - truth_at) if got_at == got_at else math.inf
        if excess_at - bound_at > 0:
            within = False
            ratio = (excess_at - bound_at) / max(bound_at, 1e-300)
            if ratio >= worst_excess:
                worst_excess = ratio
                index = tuple(int(k) for k in torch.unravel_index(torch.tensor(top_at), g.shape))
                worst = (
                    f"output {i} at {index}: got {got_at:.6g}, "
                    f"truth {truth_at:.6g}, "
                    f"bound atol={atol:g} + floor={floor:g}*{scale:.6g} + rtol={rtol:g}*|truth|"
                )
    return Error(max_abs, max_rel, within, worst)


def within_tol(got, truth, tol) -> Error:
    """`compare` with the bound of a `cases.spec.Tol` (anything with rtol, atol, floor, norm)."""
    return compare(got, truth, tol.rtol, tol.atol, floor=tol.floor, norm=tol.norm)


def check(got, truth, tol, inputs: tuple, before: dict) -> Error:
    """A variant's check: its result within `tol` of the truth, and its `inputs` as they were in
    `before` (`harness.measure.mutation.snapshot`, taken before the call): a variant that writes into its
    inputs is wrong however close its result, since every later call sees other inputs."""
    err = within_tol(got, truth, tol)
    names = tuple(mutation.changed(inputs, before))
    if not names:
        return err
    where = f"changed in place by the call: {', '.join(names)}"
    return dataclasses.replace(
        err, within=False, changed_inputs=names, worst=f"{where}; {err.worst}" if err.worst else where
    )


# The largest block `poison_recycled` fills: larger host blocks are mapped fresh (zeros) by glibc,
# and a fill per output of more than this would cost a check more than the call it checks.
POISON_MAX_BYTES = 32 * 2**20


def poison_recycled(truth) -> None:
    """Overwrite the freed memory a variant's new output is most likely to be handed next.

    A variant that returns `torch.empty(...)` without writing it returns whatever its allocator
    hands back. Right after another variant computed the answer on the same inputs and freed it,
    that is the answer itself: KernelBench's stale-buffer case, which the suite reaches too (the
    variants of a comparison share their inputs, and test_check runs them one after another). So
    before the call: a block of each output's size in every itemsize (1, 2, 4, 8 bytes) is asked
    for, filled with 0xFF bytes (NaN in every float dtype, -1 in every integer one) and freed: the
    same request in the same allocator state is handed the block the variant would have been.
    Best effort on its own (the caching allocator's and glibc's choices are theirs); on the host
    `allocator.perturbed` fills every block handed out during the call as well, except the few
    glibc hands back through its tcache (≤ 1 KiB; measured 1 in 240), which this covers.
    """
    for t in _as_tuple(truth):
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            continue
        for itemsize in (1, 2, 4, 8):
            if 0 < t.numel() * itemsize <= POISON_MAX_BYTES:
                torch.empty(t.numel() * itemsize, dtype=torch.uint8, device=t.device).fill_(0xFF)


def fresh_call(fn: Callable[..., Any], truth) -> Any:
    """`fn()` on memory that holds nothing stale: the freed blocks its outputs are likely to be
    handed poisoned (`poison_recycled`), and every host block handed out during the call filled
    with a pattern (`allocator.perturbed`)."""
    poison_recycled(truth)
    with allocator.perturbed():
        return fn()


def checked_call(fn: Callable[..., Any], inputs: tuple, truth, tol) -> tuple[Any, Error]:
    """`fn(*inputs)` run once, on memory holding nothing stale (`fresh_call`), and checked (`check`)."""
    before = mutation.snapshot(inputs)
    got = fresh_call(lambda: fn(*inputs), truth)
    return got, check(got, truth, tol, inputs, before)


def bitwise_identical(a, b) -> bool:
    """Bitwise-equal outputs (tensors, or tuples of them): two ways that may be one computation."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        return all(bitwise_identical(x, y) for x, y in zip(a, b))
    return False


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)
