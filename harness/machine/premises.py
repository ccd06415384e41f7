"""The hardware premises some claims rest on, detected on this machine, never assumed.

"The bf16 flag makes oneDNN's fp32 GEMMs less precise" is true on a Xeon with AMX and false on one
with AVX-512-BF16 alone; "TF32 trades precision for speed" needs an Ampere (sm_80+) GPU; DataParallel's
behaviour depends on how many GPUs the process sees; torch.compile needs a working C++ compiler on
CPU and Triton on CUDA. A check whose claim rests on such a premise asks here, puts the answer
(what was read and what was measured) in its finding, and says `depends` where the premise is
absent instead of failing; a test that cannot run without it is skipped through a `requires` token
(`harness.machine.requirements`).

Where the effect itself can be measured, the measurement decides and everything read is evidence
only, because the readings lie: torch's `_is_mkldnn_bf16_supported()` and the cpuinfo flag
`avx512_bf16` both say yes on CPUs where oneDNN does not round to bf16 under the bf16 fpmath mode
(there the flag only changes the summation order), and even with AMX oneDNN keeps GEMMs below 32×32
in fp32. So the reduced-precision premises are measured on inputs whose rounding has an exact
signature, at the shapes of the computation the claim is about (`_rounds_inputs`).
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

from harness.measure import device as devices
from harness.measure import precision_flags as flags

CPUINFO = "/proc/cpuinfo"

# cpuinfo flags recorded as evidence for each reduced fp32 mode of oneDNN (AMX-TF32 is announced for
# Xeons after Granite Rapids; no CPU this suite has met lists it).
_CPU_EVIDENCE = {"bf16": ("amx_bf16", "avx512_bf16", "avx512f"), "tf32": ("amx_tf32", "amx_fp16")}


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


# ---- reduced-precision fp32: oneDNN bf16/TF32 on the CPU, TF32 on CUDA --------------------------

# Exact in fp32 (24-bit significand); TF32 (11 bits) and bf16 (8 bits) round it to 1.
_ODD = 1 + 2.0**-12
# The torch.set_float32_matmul_precision level that asks for each mode (oneDNN: 'medium' → bf16,
# 'high' → tf32; cuBLAS: 'high' → TF32).
_MATMUL_LEVEL = {"ieee": "highest", "bf16": "medium", "tf32": "high"}
DEFAULT_SHAPES = {"matmul": ((256, 256), (256, 256)), "conv": ((8, 64, 32, 32), (64, 64, 3, 3))}


def _reference(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b if op == "matmul" else F.conv2d(a, b, padding=1)


def _flagged(op: str, device: torch.device, mode: str):
    """`op` (a matmul, or a 3×3 conv with padding 1) as the precision flags make `device` run it:
    `mode` 'ieee', or the reduced one ('bf16', 'tf32')."""

    def run(a, b):
        if op == "matmul":
            with flags.matmul_precision(_MATMUL_LEVEL[mode]):
                return a @ b
        with flags.conv_precision(device, reduced=mode != "ieee"):
            return F.conv2d(a, b, padding=1)

    return run


@functools.cache
def _rounds_inputs(device: str, op: str, mode: str, shapes: tuple) -> tuple[bool, str]:
    """Whether the `mode` flag makes `device` round the fp32 inputs of `op` at these shapes to a
    shorter significand, and what was seen.

    Operands 1 + 2⁻¹² and 1 give that rounding a signature no summation order can fake: each output
    is a sum of K equal products, exactly K·(1 + 2⁻¹²) in fp32 (under 24 significant bits for
    K < 2¹²) in any order, while TF32 and bf16 round 1 + 2⁻¹² to 1 and give K. An output counts as
    rounded when it moved at least halfway from the first towards the second, which also leaves
    room for transform-based kernels (Winograd, FFT) whose own error is far below K·2⁻¹². A kernel
    that only sums in another order (oneDNN under the bf16 flag on AVX-512-BF16 without AMX) keeps
    every output where it was. Kernel choice depends on the shapes, not the values, so the probe
    takes the shapes of the computation it stands for."""
    dev = torch.device(device)
    a, b = torch.full(shapes[0], _ODD, device=dev), torch.ones(shapes[1], device=dev)
    exact = _reference(op, a.double(), b.double()).cpu()
    gap = exact - _reference(op, torch.ones_like(a).double(), b.double()).cpu()  # > 0 everywhere

    def rounded_share(out: torch.Tensor) -> float:
        return ((exact - out.double().cpu()) > gap / 2).double().mean().item()

    ieee, reduced = (rounded_share(_flagged(op, dev, m)(a, b)) for m in ("ieee", mode))
    what = f"{op} of 1+2⁻¹² by 1 at {' · '.join('×'.join(map(str, s)) for s in shapes)}"
    seen = (
        f"the {mode} flag rounded the fp32 inputs of a {what} ({reduced:.0%} of outputs rounded)"
        if reduced
        else f"the {mode} flag left the fp32 inputs of a {what} unrounded"
    )
    if ieee:
        seen += f"; the IEEE path rounded too ({ieee:.0%} of outputs): is an fp32 override in force?"
    return reduced > 0, seen


def _shapes(op: str, shapes) -> tuple:
    return tuple(tuple(s) for s in (shapes or DEFAULT_SHAPES[op]))


def onednn_reduced(op: str, mode: str = "bf16", shapes=None) -> Premise:
    """oneDNN computing fp32 `op` ('matmul' or 'conv') in `mode` ('bf16'; 'tf32' for a matmul at
    'high') when the precision flag asks for it, at `shapes` (the two operands'; default: sizes
    oneDNN gives to its AMX kernels where it has them). Measured by `_rounds_inputs`."""
    name = f"oneDNN {mode} for fp32 {op} on this CPU"
    read = f"read: {_flags_read(_CPU_EVIDENCE[mode])}; {_torch_says_bf16()}"
    if op == "conv" and not flags.has_new_api():
        return Premise(name, False, f"torch {torch.__version__} has no CPU conv precision switch; {read}")
    present, seen = _rounds_inputs("cpu", op, mode, _shapes(op, shapes))
    return Premise(name, present, f"measured: {seen}; {read}")


# ---- GPUs -----------------------------------------------------------------------------------------


def gpu_count() -> int:
    """GPUs this process can use (CUDA_VISIBLE_DEVICES applies); 0 without CUDA."""
    return devices.cuda_count()


def gpus(at_least: int) -> Premise:
    n = gpu_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    names = f": {', '.join(devices.cuda(i).name() for i in range(n))}" if n else ""
    return Premise(f">= {at_least} GPU(s)", n >= at_least, f"{n} visible to this process{where}{names}")


def _sm(where) -> tuple[int, int, str]:
    gpu = devices.CudaDevice(where)
    major, minor = gpu.capability()
    return major, minor, f"{gpu.name()} sm_{major}{minor}"


def cuda_tensor_cores(device, dtype: str) -> Premise:
    """Tensor cores for `dtype` ('tf32', 'bf16', 'fp16') on the GPU, read from its compute capability:
    fp16 from Volta (sm_70), TF32 and bf16 from Ampere (sm_80). Below that bf16 still runs, emulated
    in fp32 (cuBLAS) or on CUDA-core kernels (PyTorch hands bf16 convs to cuDNN only from sm_80)."""
    major, _, sm = _sm(device)
    needed = 7 if dtype == "fp16" else 8
    return Premise(
        f"{dtype} tensor cores on {device}", major >= needed, f"{sm}; {dtype} tensor cores need sm_{needed}0+"
    )


def cuda_tf32(device, op: str, shapes=None) -> Premise:
    """cuBLAS (matmul) / cuDNN (conv) computing fp32 `op` in TF32 when the flag allows it. Measured
    by `_rounds_inputs`; the compute capability (TF32 units from sm_80) is evidence for it."""
    device = torch.device(device)
    if device.index is None:
        device = devices.current_cuda().torch_device
    hardware = cuda_tensor_cores(device, "tf32")
    present, seen = _rounds_inputs(str(device), op, "tf32", _shapes(op, shapes))
    return Premise(f"TF32 for fp32 {op} on cuda", present, f"measured: {seen}; read: {hardware.evidence}")


def reduced_fp32(device, op: str, shapes=None) -> Premise:
    """The reduced-precision fp32 path the precision flags select on `device`: TF32 on CUDA, oneDNN
    bf16 on the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        return cuda_tf32(device, op, shapes)
    return onednn_reduced(op, "bf16", shapes)


# ---- environment variables that overrule the precision flags on CUDA ------------------------------

# The variable, the value that acts, and what it then does. NVIDIA_TF32_OVERRIDE is read by cuBLAS
# and cuDNN themselves: 0 keeps them off TF32 whatever a caller asks; NVIDIA documents no other
# value as doing anything. TORCH_ALLOW_TF32_CUBLAS_OVERRIDE is read by torch (once, at the first
# precision query: at::Context::allowTF32CuBLAS), and only "1" acts (measured: "true", "ON", "yes"
# and "2" leave torch.backends.cuda.matmul.allow_tf32 False): every fp32 cuBLAS matmul then runs in
# TF32, and allow_tf32 reads True even after it is set to False. NVIDIA's PyTorch containers set it.
TF32_OVERRIDES = {
    "NVIDIA_TF32_OVERRIDE": ("0", "keeps cuBLAS and cuDNN off TF32 whatever torch's flags ask"),
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": (
        "1",
        "makes torch run every fp32 cuBLAS matmul in TF32 whatever torch.backends.cuda.matmul.allow_tf32 "
        "and torch.set_float32_matmul_precision say",
    ),
}
# What each premise below needs absent: the flags deciding TF32 on *and* off; IEEE fp32 available.
_TF32_FLAGS_NEED_ABSENT = tuple(TF32_OVERRIDES)
_IEEE_FP32_NEEDS_ABSENT = ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",)


def tf32_overrides_in_force(names=tuple(TF32_OVERRIDES)) -> dict[str, str]:
    """Those of `names` set in this process's environment to the value that acts: {name: value}."""
    return {n: os.environ[n] for n in names if os.environ.get(n) == TF32_OVERRIDES[n][0]}


def _overrides_premise(name: str, device, needs_absent: tuple[str, ...]) -> Premise:
    device = torch.device(device)
    acting = tf32_overrides_in_force(needs_absent)
    if device.type != "cuda":
        set_here = {n: os.environ[n] for n in TF32_OVERRIDES if n in os.environ}
        seen = ", ".join(f"{n}={v!r}" for n, v in set_here.items()) or "neither is set"
        return Premise(
            name,
            True,
            f"{' and '.join(TF32_OVERRIDES)} act on cuBLAS and cuDNN only: on {device.type} they change "
            f"nothing ({seen})",
        )
    if not acting:
        seen = ", ".join(f"{n}={os.environ.get(n)!r}" for n in needs_absent)
        return Premise(name, True, f"no override in force ({seen})")
    return Premise(
        name,
        False,
        "; ".join(f"{n}={v} in the environment {TF32_OVERRIDES[n][1]}" for n, v in acting.items()),
    )


def tf32_flags_decide(device) -> Premise:
    """The TF32 flags (allow_tf32, set_float32_matmul_precision, fp32_precision) decide whether fp32
    matmuls and convolutions on `device` run in TF32: neither override variable acts. What a check
    of TF32 on against TF32 off needs; on a CPU the variables do nothing, so it holds there."""
    return _overrides_premise(
        f"TF32 flags decide fp32 precision on {torch.device(device).type}", device, _TF32_FLAGS_NEED_ABSENT
    )


def ieee_fp32(device) -> Premise:
    """IEEE fp32 matmuls available on `device` when the flags ask for them (the default, and what
    cases._lib.precision.ieee_fp32 sets): TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 takes them away on
    CUDA. NVIDIA_TF32_OVERRIDE=0 only keeps TF32 off, which an IEEE check does not mind."""
    return _overrides_premise(
        f"IEEE fp32 matmuls on {torch.device(device).type}", device, _IEEE_FP32_NEEDS_ABSENT
    )


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
        cmd = [
            cxx,
            "-x",
            "c++",
            "-fopenmp",
            f"-I{sysconfig.get_paths()['include']}",
            "-c",
            "-",
            "-o",
            str(Path(d) / "probe.o"),
        ]
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


_COMPILE_PROBED: dict[str, Premise] = {}  # device → what torch_compile found in this process


def torch_compile(device: str) -> Premise:
    """torch.compile's default backend (Inductor) able to build kernels for `device`: TorchDynamo
    supported on this Python; on CPU a C++ compiler that builds what Inductor writes (measured: it
    compiles a probe); on CUDA, Triton importable and a GPU Triton supports (sm_70+). Probed once
    per process: importing TorchDynamo and compiling the probe take 1.5-3 s."""
    if device not in _COMPILE_PROBED:
        _COMPILE_PROBED[device] = _torch_compile(device)
    return _COMPILE_PROBED[device]


def _torch_compile(device: str) -> Premise:
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
    torch.compile where a point of the run needed it, NCCL and the TF32 override variables."""
    found = [
        onednn_reduced("matmul", "bf16"),
        onednn_reduced("conv", "bf16"),
        onednn_reduced("matmul", "tf32"),
        gpus(1),
        gpus(2),
    ]
    compile_on = ["cpu"]
    if gpu_count():
        cuda = devices.current_cuda().torch_device
        found += [cuda_tensor_cores(cuda, d) for d in ("tf32", "bf16", "fp16")]
        found += [nccl()]
        compile_on.append("cuda")
    # Read on every machine: a results file from a GPU box says whether the flags were overruled,
    # and one from a CPU box that the variables, where set, did nothing.
    device = "cuda" if gpu_count() else "cpu"
    found += [tf32_flags_decide(device), ieee_fp32(device)]
    out = {p.name: {"present": p.present, "evidence": p.evidence} for p in found}
    for d in compile_on:
        # The run's compiled points asked already; a run without any does not pay the probe.
        probed = _COMPILE_PROBED.get(d)
        out[f"torch.compile on {d}"] = (
            {"present": probed.present, "evidence": probed.evidence}
            if probed is not None
            else {"present": None, "evidence": "not probed: no point run in this process needed it"}
        )
    return out
