"""The machine a result came from. The package holds the hardware premises claims rest on,
measured rather than assumed (`premises`), the requirements a point has of them (`requirements`),
the machine's ceilings and a point's roofline (`ceilings`), its A/A noise floor (`noise`) and what
a run measures of it once per device (`machine_measures`). This face holds its description:

What machine a result came from: versions, devices, CPU features and precision settings.

Stored in every results file (pytest-benchmark's ``machine_info``) so a number is never read
without knowing where it was measured. bf16 speed on a CPU depends on AVX-512-BF16/AMX, TF32
speed on the TF32 flags in force, so those are recorded too, with the premises claims rest on
(`harness.machine.premises`: what oneDNN and the GPUs really do here, measured where it can be).
"""

from __future__ import annotations

import os
import platform

import torch

from harness.machine import premises
from harness.measure import device as devices

PRECISION_SETTINGS = (
    "backends.cuda.matmul.allow_tf32",
    "backends.cudnn.allow_tf32",
    "backends.fp32_precision",
    "backends.cuda.matmul.fp32_precision",
    "backends.cudnn.fp32_precision",
    "backends.cudnn.conv.fp32_precision",
    "backends.mkldnn.fp32_precision",
)
CPU_FEATURES = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile", "amx_fp16")


def precision_settings() -> dict[str, str]:
    """Every TF32/precision flag as this torch reports it (absent ones say so, never guessed).

    torch 2.9+ raises when a legacy flag is read after the new ``fp32_precision`` API was used;
    that is recorded as the value rather than hidden.
    """
    settings = {"float32_matmul_precision": torch.get_float32_matmul_precision()}
    for path in PRECISION_SETTINGS:
        obj = torch
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            settings[path] = str(obj)
        except AttributeError:
            settings[path] = "absent in this torch"
        except RuntimeError as exc:
            settings[path] = f"unreadable: {exc}".splitlines()[0]
    return settings


def cpu_info() -> dict:
    model, flags = platform.processor() or platform.machine(), premises.cpu_flags()
    try:
        with open(premises.CPUINFO) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                    break
    except OSError:
        pass
    return {
        "model": model,
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "features": {name: name in flags for name in CPU_FEATURES},
    }


def gpu_info() -> dict:
    if not devices.cuda_available():
        return {"count": 0}
    props = devices.cuda(0).properties()
    return {
        "count": devices.cuda_count(),
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "memory_bytes": props.total_memory,
        "multiprocessors": props.multi_processor_count,
    }


def machine_info() -> dict:
    return {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "gpu": gpu_info(),
        "cpu_detail": cpu_info(),
        "precision": precision_settings(),
        "premises": premises.summary(),
    }


def machine_label(info: dict) -> str:
    """A short, stable name for grouping results by machine: the GPU if any, else the CPU."""
    gpu = info.get("gpu") or {}
    if gpu.get("count"):
        return f"{gpu['name']} x{gpu['count']}"
    cpu = info.get("cpu_detail") or {}
    return f"{cpu.get('model', 'cpu')} ({cpu.get('usable_cores', '?')} cores)"
