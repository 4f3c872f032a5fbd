"""The machine a result or timing came from: CPU model and flags, GPU name, threads."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

import torch


@functools.lru_cache(maxsize=1)
def cpu_model_name() -> str:
    """The CPU's model name (``AMD EPYC``, ``Intel(R) Xeon(R) ...``), or the platform's processor."""
    path = Path("/proc/cpuinfo")
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return " ".join(line.partition(":")[2].split())
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU flags Linux reports (empty elsewhere)."""
    path = Path("/proc/cpuinfo")
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("flags"):
                return frozenset(line.partition(":")[2].split())
    return frozenset()


def hardware_summary(device: str = "cpu", with_threads: bool = True) -> str:
    """One line naming the hardware a timing or result came from.

    CPU: ``Intel(R) Xeon(R) Processor; torch capability AVX512; bf16 units: AVX-512 BF16, AMX; 2 threads``.
    CUDA: the device name and CUDA version.
    """
    if torch.device(device).type == "cuda":
        index = torch.device(device).index or 0
        return f"{torch.cuda.get_device_name(index)} (CUDA {torch.version.cuda})"
    flags = cpu_flags()
    units = [name for flag, name in (("avx512_bf16", "AVX-512 BF16"), ("amx_bf16", "AMX")) if flag in flags]
    summary = (
        f"{cpu_model_name()}; torch capability {torch.backends.cpu.get_cpu_capability()}; "
        f"bf16 units: {', '.join(units) or 'none'}"
    )
    return f"{summary}; {torch.get_num_threads()} threads" if with_threads else summary
