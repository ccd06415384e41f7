"""The hardware premises some claims rest on, detected on this machine, never assumed.

"The bf16 flag makes oneDNN's fp32 GEMMs less precise" is true on a Xeon with AMX and false on one
with AVX-512-BF16 alone; "TF32 trades precision for speed" needs an Ampere (sm_80+) GPU; DataParallel's
behaviour depends on how many GPUs the process sees; torch.compile needs a working C++ compiler on
CPU and Triton on CUDA. A check whose claim rests on such a premise asks here, puts the answer
(what was read and what was measured) in its finding, and says `depends` where the premise is
absent instead of failing; a test that cannot run without it is skipped through a `requires` token
(`harness.requirements`).

Where the effect itself can be measured, the measurement decides and everything read is evidence
only, because the readings lie: torch's `_is_mkldnn_bf16_supported()` and the cpuinfo flag
`avx512_bf16` both say yes on CPUs where oneDNN ignores the bf16 fpmath mode, and even with AMX
oneDNN keeps GEMMs below 32×32 in fp32. A check therefore passes its own observation (did the flag
change *its* result?) as `changed`; without one, a probe at a size oneDNN/cuBLAS give to their
reduced-precision kernels stands in.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from harness import precision_flags as flags

CPUINFO = "/proc/cpuinfo"

# cpuinfo flags recorded as evidence for each reduced fp32 mode of oneDNN (AMX-TF32 is announced for
# Xeons after Granite Rapids; no CPU this suite has met lists it).
_CPU_EVIDENCE = {"bf16": ("amx_bf16", "avx512_bf16", "avx512f"), "tf32": ("amx_tf32", "amx_fp16")}
# The level of torch.set_float32_matmul_precision that asks oneDNN for each mode.
_MATMUL_LEVEL = {"bf16": "medium", "tf32": "high"}


@dataclass(frozen=True)
class Premise:
    name: str
    present: bool
    evidence: str  # what was read and what was measured, enough to judge the answer without rerunning

    def __str__(self) -> str:
        return f"premise '{self.name}' {'present' if self.present else 'absent'} ({self.evidence})"


# ---- the CPU --------------------------------------------------------------------------------------


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as the kernel lists them (empty where there is no /proc/cpuinfo)."""
    try:
        with open(CPUINFO) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def _flags_read(names) -> str:
    have = cpu_flags()
    return ", ".join(f"{n} {'yes' if n in have else 'no'}" for n in names)


def _torch_says_bf16() -> str:
    query = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    answer = "unknown" if query is None else ("yes" if query() else "no")
    return f"torch's mkldnn bf16 query {answer}; CPU capability {torch.backends.cpu.get_cpu_capability()}"


def _changed(ieee: torch.Tensor, reduced: torch.Tensor) -> tuple[bool, float]:
    return not torch.equal(ieee, reduced), (ieee.double() - reduced.double()).abs().max().item()


def _effect(flag: str, changed: bool, what: str) -> str:
    return f"the {flag} flag changed {what}" if changed else f"the {flag} flag left {what} bitwise unchanged"


@functools.cache
def _onednn_probe(op: str, mode: str) -> tuple[bool, float]:
    """(changed, max |reduced − ieee|) for fp32 `op` under oneDNN's `mode`, at 256×256 GEMM / a 64-channel
    3×3 conv: sizes oneDNN hands to its AMX kernels where it has them."""
    g, cpu = torch.Generator().manual_seed(0), torch.device("cpu")
    if op == "matmul":
        a, b = torch.randn(256, 256, generator=g), torch.randn(256, 256, generator=g)
        with flags.matmul_precision("highest"):
            ieee = a @ b
        with flags.matmul_precision(_MATMUL_LEVEL[mode]):
            reduced = a @ b
        return _changed(ieee, reduced)
    if mode != "bf16":
        raise ValueError(f"oneDNN has no {mode} switch for {op}")
    x, w = torch.randn(8, 64, 32, 32, generator=g), torch.randn(64, 64, 3, 3, generator=g) / 24
    with flags.conv_precision(cpu, reduced=False):
        ieee = F.conv2d(x, w, padding=1)
    with flags.conv_precision(cpu, reduced=True):
        reduced = F.conv2d(x, w, padding=1)
    return _changed(ieee, reduced)


def onednn_reduced(op: str, mode: str = "bf16", changed: bool | None = None) -> Premise:
    """oneDNN computing fp32 `op` ('matmul' or 'conv') in `mode` ('bf16'; 'tf32' for a matmul at
    'high') when the precision flag asks for it. Present when the flag changes the result:
    `changed` is the caller's own observation; without one, `_onednn_probe` measures it."""
    name = f"oneDNN {mode} for fp32 {op} on this CPU"
    read = f"read: {_flags_read(_CPU_EVIDENCE[mode])}; {_torch_says_bf16()}"
    if op == "conv" and not flags.has_new_api():
        return Premise(name, False, f"torch {torch.__version__} has no CPU conv precision switch; {read}")
    if changed is None:
        changed, diff = _onednn_probe(op, mode)
        seen = _effect(mode, changed, f"a probe {op}") + f" (max diff {diff:.2g})"
    else:
        seen = _effect(mode, changed, f"the check's own {op}")
    return Premise(name, changed, f"measured: {seen}; {read}")


# ---- GPUs -----------------------------------------------------------------------------------------


def gpu_count() -> int:
    """GPUs this process can use (CUDA_VISIBLE_DEVICES applies); 0 without CUDA."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpus(at_least: int) -> Premise:
    n = gpu_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    names = f": {', '.join(torch.cuda.get_device_name(i) for i in range(n))}" if n else ""
    return Premise(f">= {at_least} GPU(s)", n >= at_least, f"{n} visible to this process{where}{names}")


def _sm(device) -> tuple[int, int, str]:
    major, minor = torch.cuda.get_device_capability(device)
    return major, minor, f"{torch.cuda.get_device_name(device)} sm_{major}{minor}"


def cuda_tensor_cores(device, dtype: str) -> Premise:
    """Tensor cores for `dtype` ('tf32', 'bf16', 'fp16') on the GPU, read from its compute capability:
    fp16 from Volta (sm_70), TF32 and bf16 from Ampere (sm_80). Below that bf16 still runs, emulated
    in fp32 (cuBLAS) or on CUDA-core kernels (PyTorch hands bf16 convs to cuDNN only from sm_80)."""
    major, _, sm = _sm(device)
    needed = 7 if dtype == "fp16" else 8
    return Premise(f"{dtype} tensor cores on {device}", major >= needed,
                   f"{sm}; {dtype} tensor cores need sm_{needed}0+")


@functools.cache
def _tf32_probe(index: int, op: str) -> tuple[bool, float]:
    device = torch.device("cuda", index)
    g = torch.Generator().manual_seed(0)
    if op == "matmul":
        a, b = (torch.randn(512, 512, generator=g).to(device) for _ in range(2))
        with flags.matmul_precision("highest"):
            ieee = a @ b
        with flags.matmul_precision("high"):
            reduced = a @ b
    else:
        x = torch.randn(8, 64, 32, 32, generator=g).to(device)
        w = (torch.randn(64, 64, 3, 3, generator=g) / 24).to(device)
        with flags.conv_precision(device, reduced=False):
            ieee = F.conv2d(x, w, padding=1)
        with flags.conv_precision(device, reduced=True):
            reduced = F.conv2d(x, w, padding=1)
    return _changed(ieee.cpu(), reduced.cpu())


def cuda_tf32(device, op: str, changed: bool | None = None) -> Premise:
    """cuBLAS (matmul) / cuDNN (conv) computing fp32 `op` in TF32 when the flag allows it. Decided by
    the measured effect; the compute capability (TF32 units from sm_80) is the evidence for it."""
    device = torch.device(device)
    hardware = cuda_tensor_cores(device, "tf32")
    if changed is None:
        index = device.index if device.index is not None else torch.cuda.current_device()
        changed, diff = _tf32_probe(index, op)
        seen = _effect("TF32", changed, f"a probe {op}") + f" (max diff {diff:.2g})"
    else:
        seen = _effect("TF32", changed, f"the check's own {op}")
    return Premise(f"TF32 for fp32 {op} on {device.type}", changed,
                   f"measured: {seen}; read: {hardware.evidence}")


def reduced_fp32(device, op: str, changed: bool | None = None) -> Premise:
    """The reduced-precision fp32 path the precision flags select on `device`: TF32 on CUDA, oneDNN
    bf16 on the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        return cuda_tf32(device, op, changed)
    return onednn_reduced(op, "bf16", changed)


def nccl() -> Premise:
    built = torch.distributed.is_available() and torch.distributed.is_nccl_available()
    return Premise("NCCL", built, f"torch {torch.__version__} {'is' if built else 'is not'} built with NCCL")


# ---- torch.compile --------------------------------------------------------------------------------

# What Inductor's CPU kernels need from the toolchain: C++ with OpenMP, and Python's headers (the
# kernels are loaded as Python extensions).
_CXX_PROBE = "#include <Python.h>\n#include <omp.h>\nint probe() { return omp_get_max_threads(); }\n"


def _inductor_compilers() -> list[str]:
    """The C++ compilers Inductor tries, in its order ($CXX, else g++; clang++ on macOS)."""
    from torch._inductor import config

    return [c for c in config.cpp.cxx if c]


@functools.cache
def _cxx_compiles(cxx: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="premise-cxx-") as d:
        cmd = [cxx, "-x", "c++", "-fopenmp", f"-I{sysconfig.get_paths()['include']}", "-c", "-",
               "-o", str(Path(d) / "probe.o")]
        try:
            run = subprocess.run(cmd, input=_CXX_PROBE, capture_output=True, text=True, timeout=60)
        except (FileNotFoundError, PermissionError) as exc:
            return False, f"{cxx}: {exc.strerror}"
        except subprocess.TimeoutExpired:
            return False, f"{cxx}: no answer in 60 s"
    if run.returncode != 0:
        first = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[0]
        return False, f"{cxx} failed on a C++/OpenMP/Python.h probe: {first}"
    return True, f"{cxx} compiled a C++/OpenMP/Python.h probe"


def torch_compile(device: str) -> Premise:
    """torch.compile's default backend (Inductor) able to build kernels for `device`: TorchDynamo
    supported on this Python; on CPU a C++ compiler that builds what Inductor writes (measured: it
    compiles a probe); on CUDA, Triton importable and a GPU Triton supports (sm_70+)."""
    name = f"torch.compile on {device}"
    if not hasattr(torch, "compile"):
        return Premise(name, False, f"torch {torch.__version__} has no torch.compile")
    from torch import _dynamo  # here, not at the top: importing it takes a second and most runs never ask

    if not _dynamo.is_dynamo_supported():
        return Premise(name, False, f"TorchDynamo does not support torch {torch.__version__} on this Python")
    if device == "cpu":
        tried = []
        for cxx in _inductor_compilers():
            ok, what = _cxx_compiles(cxx)
            if ok:
                return Premise(name, True, what)
            tried.append(what)
        return Premise(name, False, "; ".join(tried) or "Inductor names no C++ compiler")
    if importlib.util.find_spec("triton") is None:
        return Premise(name, False, "Triton (Inductor's GPU code generator) is not installed")
    major, _, sm = _sm(torch.device(device))
    return Premise(name, major >= 7, f"Triton installed; {sm}; Triton needs sm_70+")


def summary() -> dict[str, dict]:
    """Every premise above that can be read without a GPU measurement, for the results file's
    machine info: the CPU's oneDNN modes (measured), GPU count, tensor cores per dtype (read),
    torch.compile and NCCL."""
    found = [onednn_reduced("matmul", "bf16"), onednn_reduced("conv", "bf16"),
             onednn_reduced("matmul", "tf32"), gpus(1), gpus(2), torch_compile("cpu")]
    if gpu_count():
        cuda = torch.device("cuda", torch.cuda.current_device())
        found += [cuda_tensor_cores(cuda, d) for d in ("tf32", "bf16", "fp16")]
        found += [torch_compile("cuda"), nccl()]
    return {p.name: {"present": p.present, "evidence": p.evidence} for p in found}
