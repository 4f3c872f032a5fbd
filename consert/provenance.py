"""Provenance of a result: which model, weights, pooling, data, code and settings produced it."""

from __future__ import annotations

import datetime as _dt
import functools
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from consert.hardware import hardware_summary

_PACKAGES = ("consert", "torch", "transformers", "sentence-transformers", "scipy", "numpy")


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """Commit of the harness checkout (``-dirty`` when it has uncommitted changes), or ``unknown``."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def package_versions() -> str:
    """``name==version`` of the packages that decide the numbers, separated by ``;``."""
    found = []
    for name in _PACKAGES:
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}==absent")
    return ";".join(found)


def utc_timestamp() -> str:
    """Now, in UTC, to the second (ISO 8601): the ``timestamp`` of a result row."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def made_where_and_when(device: str) -> dict[str, str]:
    """The ``hardware``, ``harness_commit`` and ``timestamp`` columns of a result that has no fuller provenance
    (a top-k curve, a file of pair predictions): enough for a figure to name where and when it was computed."""
    return {"hardware": hardware_summary(device), "harness_commit": git_commit(), "timestamp": utc_timestamp()}


@dataclass(frozen=True)
class EncoderIdentity:
    """Which of the paper's encoders a model's weights are (``weights``; "" for none known), and how that is known
    or why not (``evidence``)."""

    weights: str
    evidence: str

    def columns(self) -> dict[str, str]:
        """The result rows' columns that carry it (``base_weights``, ``base_weights_evidence``)."""
        return {"base_weights": self.weights, "base_weights_evidence": self.evidence}


def provenance(
    *,
    model: str,
    model_sha256: str,
    setting: str,
    pooling: str,
    max_length: int,
    dtype: str,
    device: str,
    data_dir: Path | str,
    data_sha256: str,
    data_verified: bool | None = None,
    seed: int | None = None,
    engine: str,
    base_model: str | None = None,
    identity: EncoderIdentity | None = None,
    precision: str = "",
    **extra: object,
) -> dict[str, object]:
    """One flat dict of provenance columns, appended to every result row.

    ``dtype`` is the precision the numbers were computed in (``auto`` already resolved), ``engine``
    the inference engine, ``precision`` how both were chosen (the probe's figures when measured), and
    ``hardware`` names the CPU (model, capability, bf16 units, threads) or GPU.
    """
    return {
        "model": model,
        "base_model": base_model or model,
        **(identity or EncoderIdentity("", "")).columns(),  # which paper encoder it descends from (none: "")
        "setting": setting,
        "model_sha256": model_sha256,
        "pooling": pooling,
        "max_length": max_length,
        "dtype": dtype,
        "engine": engine,
        "precision": precision,
        "device": device,
        "hardware": hardware_summary(device),
        "data_dir": str(data_dir),
        "data_sha256": data_sha256,
        "data_verified": "" if data_verified is None else data_verified,
        "seed": "" if seed is None else seed,
        **extra,
        "harness_commit": git_commit(),
        "packages": package_versions(),
        "timestamp": utc_timestamp(),
    }
