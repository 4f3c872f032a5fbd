"""Saving a trained encoder in sentence-transformers' format, atomically, with its training record."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from torch import nn

from consert.encode.pooling import Pooling

TRAINING_RECORD = "consert_training.json"
TRAINING_LOG = "training_log.json"


def export_model(
    model: nn.Module,
    tokenizer,
    output_dir: str | Path,
    *,
    pooling: str,
    max_length: int,
    record: dict[str, Any],
    log: list[dict[str, Any]],
) -> Path:
    """Save ``model`` so that ``SentenceTransformer(output_dir)`` loads it with ``pooling``.

    Also writes ``consert_training.json`` (config, base model, best step and score) and
    ``training_log.json`` (one entry per step). The folder appears complete or not at all: it is
    written beside the target and renamed into place.
    """
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:  # older releases
        from sentence_transformers import models

    spec = Pooling.parse(pooling)
    target = Path(output_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        transformer = models.Transformer(str(staging), max_seq_length=max_length)
        pooling_module = models.Pooling(transformer.get_embedding_dimension(), pooling_mode=spec.kind)
        SentenceTransformer(modules=[transformer, pooling_module], device="cpu").save(str(staging))
        (staging / TRAINING_RECORD).write_text(json.dumps(record, indent=2, default=str))
        (staging / TRAINING_LOG).write_text(json.dumps(log, indent=1))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target
