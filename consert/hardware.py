"""The machine a result or timing came from: CPU model and flags, GPU name, threads."""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
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


#: oneDNN's instruction-set levels (``dnnl_cpu_isa_t``) by the name ``ONEDNN_MAX_CPU_ISA`` takes: each level's bit
#: mask contains those of the levels below it, so a cap allows a level when its mask contains the level's.
ONEDNN_ISA_MASKS = {
    "sse41": 0x1, "avx": 0x3, "avx2": 0x7, "avx2_vnni": 0xF, "avx2_vnni_2": 0x1F, "avx512_core": 0x27,
    "avx512_core_vnni": 0x67, "avx512_core_bf16": 0xE7, "avx10_1_512": 0x1EF, "avx512_core_fp16": 0x1EF,
    "avx10_1_512_amx": 0xFEF, "avx512_core_amx": 0xFEF, "avx10_1_512_amx_fp16": 0x1FEF,
    "avx512_core_amx_fp16": 0x1FEF,
}  # fmt: skip
#: The CPU's bf16 units: (``/proc/cpuinfo`` flag, name, the oneDNN level that uses it).
BF16_UNITS = (("avx512_bf16", "AVX-512 BF16", "avx512_core_bf16"), ("amx_bf16", "AMX", "avx512_core_amx"))


def onednn_isa_cap() -> str | None:
    """The level oneDNN is held to by ``ONEDNN_MAX_CPU_ISA`` (or its old name ``DNNL_MAX_CPU_ISA``), lower case;
    None where neither is set or it says ``ALL``."""
    value = (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "").strip().lower()
    return None if value in ("", "all") else value


def bf16_units() -> list[str]:
    """The CPU's bf16 units that oneDNN may use: those its flags report, less those above an ``ONEDNN_MAX_CPU_ISA``
    cap (with ``ONEDNN_MAX_CPU_ISA=AVX2`` an AVX-512 BF16 CPU computes bf16 emulated, as one without the units does).
    A cap oneDNN does not name here is taken to allow every unit."""
    flags, cap = cpu_flags(), onednn_isa_cap()
    allowed = ONEDNN_ISA_MASKS.get(cap or "", -1)
    return [
        name
        for flag, name, level in BF16_UNITS
        if flag in flags and allowed & ONEDNN_ISA_MASKS[level] == ONEDNN_ISA_MASKS[level]
    ]


def hardware_summary(device: str = "cpu", with_threads: bool = True) -> str:
    """One line naming the hardware a timing or result came from.

    CPU: ``Intel(R) Xeon(R) Processor; torch capability AVX512; bf16 units: AVX-512 BF16, AMX; 2 threads``.
    CUDA: the device name and CUDA version.
    """
    if torch.device(device).type == "cuda":
        index = torch.device(device).index or 0
        return f"{torch.cuda.get_device_name(index)} (CUDA {torch.version.cuda})"
    units, cap = ", ".join(bf16_units()) or "none", onednn_isa_cap()
    if cap:
        units += f" (oneDNN capped at {cap.upper()})"
    summary = f"{cpu_model_name()}; torch capability {torch.backends.cpu.get_cpu_capability()}; bf16 units: {units}"
    return f"{summary}; {torch.get_num_threads()} threads" if with_threads else summary


#: The first compute capability with bf16 tensor cores and FlashAttention's kernels (Ampere: A100 8.0; H100 9.0).
AMPERE = (8, 0)


@dataclass(frozen=True)
class CardPaths:
    """What a CUDA card of one compute capability runs natively: the precisions worth measuring, in the order of
    preference (:mod:`consert.encode.precision` times them), and the packed training step's attention kernel."""

    capability: tuple[int, int]
    dtypes: tuple[str, ...]
    attention: str  # "varlen": FlashAttention's variable-length kernel; "padded": SDPA over padded rows

    @property
    def why(self) -> str:
        """The reason, in one line."""
        if self.capability >= AMPERE:
            return f"compute capability {self.capability[0]}.{self.capability[1]}: bf16 tensor cores, FlashAttention"
        return (
            f"compute capability {self.capability[0]}.{self.capability[1]} (before Ampere's 8.0): bf16 only emulated, "
            "no FlashAttention kernels; fp16 with a gradient scaler or fp32, attention over padded rows"
        )


def card_paths(capability: tuple[int, int], flash_attention_built: bool = True) -> CardPaths:
    """The decision table of a card: bf16 only where the card computes it (Ampere, 8.0, and later: torch's
    ``is_bf16_supported()`` also says yes for a V100 or T4, which only emulate it), FlashAttention's variable-length
    kernel only where the card runs it (8.0 and later, and torch was built with it), the padded path (PyTorch's
    memory-efficient kernel) elsewhere."""
    modern = tuple(capability) >= AMPERE
    dtypes = ("bf16", "fp16", "fp32") if modern else ("fp16", "fp32")
    return CardPaths(tuple(capability), dtypes, "varlen" if modern and flash_attention_built else "padded")


def cuda_card_paths(device: torch.device | str | int | None = None) -> CardPaths:
    """:func:`card_paths` of a visible CUDA card (the current one by default), asked of the driver once per card."""
    index = torch.device(device).index if isinstance(device, torch.device | str) else device
    return _card_paths_of(torch.cuda.current_device() if index is None else index)


@functools.cache
def _card_paths_of(index: int) -> CardPaths:
    return card_paths(torch.cuda.get_device_capability(index), torch.backends.cuda.is_flash_attention_available())


#: The torch release the harness pins (the README's install line), and its CUDA builds for Linux x86: the cards each
#: build carries kernels for, lowest to highest compute capability, as PyTorch's CUDA support matrix for 2.12 and
#: 2.13 lists them (RELEASE.md; pytorch/pytorch#187075, #182849): 12.6.3 Maxwell 5.0 to Hopper 9.0; 13.0.2 Turing 7.5
#: to Blackwell 12.0 (+PTX). PyPI's wheel is the 13.0 build; 2.14 is the last release with a 12.6 build (PyTorch's
#: notice of 2026-09-04: from 2.15 no CUDA 12 wheels, no Maxwell, Pascal or Volta).
TORCH_RELEASE = "2.13.0"


@dataclass(frozen=True)
class TorchBuild:
    """One CUDA build of :data:`TORCH_RELEASE`: its CUDA version, the lowest and highest compute capability it has
    kernels for, the line that installs it with pip and the lines of ``environment.yml``'s pip section for it."""

    cuda: str
    lowest: tuple[int, int]
    highest: tuple[int, int]
    install: str
    conda: str

    def runs(self, capability: tuple[int, int]) -> bool:
        """Whether this build has kernels for a card of ``capability`` (a newer card of a listed major runs them)."""
        return self.lowest <= tuple(capability) and tuple(capability)[0] <= self.highest[0]


#: The CUDA builds, in the order the install table prefers them (PyPI's first).
TORCH_BUILDS = (
    TorchBuild("13.0", (7, 5), (12, 0), f"pip install torch=={TORCH_RELEASE}", f"- torch=={TORCH_RELEASE}"),
    TorchBuild(
        "12.6",
        (5, 0),
        (9, 0),
        f"pip install torch=={TORCH_RELEASE} --index-url https://download.pytorch.org/whl/cu126",
        f"- --extra-index-url https://download.pytorch.org/whl/cu126, - torch=={TORCH_RELEASE}+cu126",
    ),
)
#: Cards of the decision table, by compute capability (the GPU box page's rows).
CARDS = {
    (3, 7): "K80", (6, 1): "GTX 1080, P40", (7, 0): "V100", (7, 5): "T4, RTX 2080", (8, 0): "A100",
    (8, 6): "A10, RTX 3090", (8, 9): "L4, L40S, RTX 4090", (9, 0): "H100, H200", (10, 0): "B200",
    (12, 0): "RTX 5090",
}  # fmt: skip


def torch_build_for(capability: tuple[int, int]) -> TorchBuild | None:
    """The build of :data:`TORCH_RELEASE` that runs a card of ``capability`` (PyPI's where it does), or None: no build
    of the release has its kernels."""
    return next((build for build in TORCH_BUILDS if build.runs(capability)), None)


def arch_runs(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether torch's kernels (``torch.cuda.get_arch_list()``: ``sm_75``, ..., ``compute_120``) run a card of
    ``capability``: a binary of its major and a minor at most its own, or PTX of a capability at most its own."""
    major, minor = capability
    for arch in arch_list:
        kind, _, digits = arch.partition("_")
        if not digits.isdigit():
            continue
        built = (int(digits[:-1]), int(digits[-1]))
        if (kind == "sm" and built[0] == major and built[1] <= minor) or (kind == "compute" and built <= capability):
            return True
    return False


def build_fault(capability: tuple[int, int], arch_list: list[str], name: str = "") -> str:
    """Why this torch cannot run a card of ``capability`` (its architecture list has no kernels for it), with the
    install line that has them; "" when it can."""
    if arch_runs(capability, arch_list):
        return ""
    card = f"{name or 'the GPU'} (compute capability {capability[0]}.{capability[1]})"
    build = torch_build_for(capability)
    built = f"torch {torch.__version__} (CUDA {torch.version.cuda}) has kernels for {', '.join(arch_list) or 'no card'}"
    if build is None:
        return f"{card}: {built}, and no build of torch {TORCH_RELEASE} runs it (its lowest is 5.0); use a newer card"
    return f"{card}: {built}; install the CUDA {build.cuda} build: `{build.install}`, then `pip install -e .`"


def cuda_build_fault() -> str:
    """Why this torch cannot run a visible card ("" when it runs them all): a V100 under PyPI's CUDA 13 build passes
    ``torch.cuda.is_available()``, then its first kernel fails ("no kernel image is available")."""
    arch_list = torch.cuda.get_arch_list()
    for index in range(torch.cuda.device_count()):
        fault = build_fault(torch.cuda.get_device_capability(index), arch_list, torch.cuda.get_device_name(index))
        if fault:
            return fault
    return ""


def card_table() -> str:
    """The GPU box page's table: each card of :data:`CARDS`, the build of :data:`TORCH_RELEASE` that runs it and its
    install line, the precisions the probe measures on it and the packed step's attention."""
    rows = [
        f"| compute capability | cards | CUDA build of torch {TORCH_RELEASE} | pip | conda (`environment.yml`'s pip "
        "section) | precisions measured | attention of the packed step |",
        "|---|---|---|---|---|---|---|",
    ]
    for capability, cards in CARDS.items():
        build, paths = torch_build_for(capability), card_paths(capability)
        if build is None:
            install, dtypes = "none | no build runs it | no build runs it", "-"
        else:
            install, dtypes = f"{build.cuda} | `{build.install}` | `{build.conda}`", ", ".join(paths.dtypes)
        rows.append(f"| {capability[0]}.{capability[1]} | {cards} | {install} | {dtypes} | {paths.attention} |")
    return "\n".join(rows) + "\n"
