"""Numeric precision chosen from the hardware, and a one-line description of that hardware.

``dtype: auto`` (the default everywhere) resolves per device:

* CPU: ``bf16`` only where the CPU computes it natively (AVX-512 BF16 or AMX tiles); elsewhere bf16
  is emulated and measured 10x slower for a training step and 4x slower for encoding than fp32
  (AVX2 EPYC, MiniLM), so ``fp32``.
* CUDA: ``bf16`` on devices that support it (Ampere and newer), else ``fp16`` autocast with a
  gradient scaler for training, as the authors' apex O1 mixed precision did.

Explicit ``fp32``, ``bf16`` and ``fp16`` are honoured as given (``fp16`` on CUDA only).
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

import torch

#: What a config or command line may ask for.
DTYPE_CHOICES = ("auto", "fp32", "bf16", "fp16")
#: What ``auto`` resolves to, and what results record.
RESOLVED_DTYPES = ("fp32", "bf16", "fp16")
TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: Environment override of the CPU's native-bf16 detection (``0`` or ``1``), for testing the fp32 path.
NATIVE_BF16_ENV = "CONSERT_CPU_NATIVE_BF16"


def _cpuinfo_flags() -> set[str]:
    """The CPU flags Linux reports (empty elsewhere)."""
    path = Path("/proc/cpuinfo")
    if not path.is_file():
        return set()
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


@functools.lru_cache(maxsize=1)
def cpu_native_bf16() -> bool:
    """True when the CPU has native bf16 arithmetic (AVX-512 BF16 or AMX), from torch or /proc/cpuinfo.

    ``CONSERT_CPU_NATIVE_BF16=0`` (or ``1``) overrides the detection.
    """
    override = os.environ.get(NATIVE_BF16_ENV)
    if override in ("0", "1"):
        return override == "1"
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if any(getattr(torch.cpu, name, lambda: False)() for name in probes):
        return True
    return bool({"avx512_bf16", "amx_bf16"} & _cpuinfo_flags())


def resolve_dtype(requested: str, device: str) -> str:
    """The precision to run with on ``device`` (``cpu`` / ``cuda[:N]``) for ``requested``."""
    if requested not in DTYPE_CHOICES:
        raise ValueError(f"unknown dtype {requested!r}; expected one of {DTYPE_CHOICES}")
    kind = torch.device(device).type
    if requested == "fp16" and kind != "cuda":
        raise ValueError("dtype fp16 is for CUDA devices only; use auto, fp32 or bf16 on a CPU")
    if requested != "auto":
        return requested
    if kind == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_native_bf16() else "fp32"


@functools.lru_cache(maxsize=1)
def cpu_model_name() -> str:
    """The CPU's model name (``AMD EPYC``, ``Intel(R) Xeon(R) ...``), or the platform's processor."""
    path = Path("/proc/cpuinfo")
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return " ".join(line.partition(":")[2].split())
    return platform.processor() or platform.machine()


def hardware_summary(device: str = "cpu") -> str:
    """One line naming the hardware a timing or result came from.

    CPU: ``AMD EPYC; torch capability AVX512; native bf16: yes; 2 threads``. CUDA: the device name.
    """
    if torch.device(device).type == "cuda":
        index = torch.device(device).index or 0
        return f"{torch.cuda.get_device_name(index)} (CUDA {torch.version.cuda})"
    native = "yes" if cpu_native_bf16() else "no (emulated)"
    return (
        f"{cpu_model_name()}; torch capability {torch.backends.cpu.get_cpu_capability()}; "
        f"native bf16: {native}; {torch.get_num_threads()} threads"
    )


def configure_cuda_matmul() -> None:
    """Let fp32 matmuls and convolutions use TF32 tensor cores on CUDA (Ampere and newer)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
