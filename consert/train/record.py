"""The training record every exported model carries (``consert_training.json``): how the loop went and where
the run came from. ConSERT's stages, its family and SG-OPT write it through the same two parts."""

from __future__ import annotations

from typing import Any

from consert.data.senteval import SentEvalData
from consert.encode.precision import Precision
from consert.hardware import hardware_summary
from consert.provenance import git_commit, package_versions
from consert.train.loop import LoopResult


def loop_record(outcome: LoopResult) -> dict[str, Any]:
    """The best dev step and score, and the exported state's (the best one, or the last)."""
    return {
        "best_step": outcome.best_step,
        "best_dev_spearman": outcome.best_dev,
        "exported_step": outcome.final_step,
        "exported_dev_spearman": outcome.final_dev,
    }


def provenance_record(precision: Precision, device: str, config: dict[str, Any], data: SentEvalData) -> dict[str, Any]:
    """The precision, the hardware and the device it trained on, the resolved config, the data's sha256, the commit
    and the packages."""
    return {
        "dtype": precision.dtype,
        "precision": precision.describe(),
        "hardware": hardware_summary(device),
        "device": device,
        "config": config,
        "data_sha256": data.fingerprint,
        "harness_commit": git_commit(),
        "packages": package_versions(),
    }
