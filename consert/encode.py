"""Sentence encoding: each distinct sentence once, length-sorted batches, any number of poolings.

One forward pass per batch serves every requested pooling, so a model's hidden states are computed
once however many poolings (and baselines built on them) are evaluated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .models import ResolvedModel, default_device, load_tokenizer_and_model, resolve_model
from .pooling import PAPER_POOLING, Pooling

DTYPES = ("fp32", "bf16")


def autocast(device: str, dtype: str):
    """bf16 autocast context on CPU or CUDA for ``dtype == 'bf16'``; a no-op for fp32."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {DTYPES}")
    if dtype == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)


class SentenceEncoder:
    """A Hugging Face encoder that turns sentences into pooled vectors.

    Args:
        model: hub id or local directory (see :func:`consert.models.resolve_model`), or an
            already-resolved model.
        max_length: tokens per sentence after truncation (the paper uses 64).
        dtype: ``fp32`` or ``bf16`` (autocast; pooled vectors are returned as float32).
        device: ``cuda``/``cpu``; default: CUDA when available.
        batch_size: sentences per forward pass.
    """

    def __init__(
        self,
        model: str | ResolvedModel,
        max_length: int = 64,
        dtype: str = "fp32",
        device: str | None = None,
        batch_size: int = 128,
    ):
        self.resolved = model if isinstance(model, ResolvedModel) else resolve_model(model)
        self.device = device or default_device()
        self.tokenizer, self.model = load_tokenizer_and_model(self.resolved, self.device)
        self.model.eval()
        self.max_length = max_length
        self.dtype = dtype
        self.batch_size = batch_size
        autocast(self.device, dtype)  # validate early

    def encode(self, sentences: Sequence[str], pooling: str = PAPER_POOLING, progress: bool = True) -> np.ndarray:
        """Encode ``sentences`` (N) into an N x d float32 array with one pooling."""
        return self.encode_poolings(sentences, [pooling], progress=progress)[str(Pooling.parse(pooling))]

    def encode_poolings(
        self, sentences: Sequence[str], poolings: Sequence[str], progress: bool = True
    ) -> dict[str, np.ndarray]:
        """Encode ``sentences`` once and return ``{pooling name: N x d float32 array}``.

        Duplicate sentences are encoded once; batches are sorted by token length so that padding
        is minimal; padding positions are masked in every mean pooling.
        """
        specs = [Pooling.parse(p) for p in poolings]
        unique = list(dict.fromkeys(sentences))
        row_of = {sentence: row for row, sentence in enumerate(unique)}
        token_ids = self.tokenizer(unique, truncation=True, max_length=self.max_length, add_special_tokens=True)[
            "input_ids"
        ]
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")[::-1]
        outputs = {spec: None for spec in specs}
        need_all = any(spec.needs_all_hidden_states for spec in specs)
        batches = range(0, len(order), self.batch_size)
        with torch.inference_mode(), autocast(self.device, self.dtype):
            for start in tqdm(batches, desc="encoding", unit="batch", disable=not progress, leave=False):
                index = order[start : start + self.batch_size]
                batch = self.tokenizer.pad({"input_ids": [token_ids[i] for i in index]}, return_tensors="pt")
                batch = {key: value.to(self.device) for key, value in batch.items()}
                out = self.model(**batch, output_hidden_states=need_all)
                hidden = out.hidden_states if need_all else (out.last_hidden_state,)
                for spec in specs:
                    pooled = spec(hidden, batch["attention_mask"]).float().cpu().numpy()
                    if outputs[spec] is None:
                        outputs[spec] = np.empty((len(unique), pooled.shape[1]), dtype=np.float32)
                    outputs[spec][index] = pooled
        rows = np.fromiter((row_of[s] for s in sentences), dtype=np.int64, count=len(sentences))
        return {str(spec): matrix[rows] for spec, matrix in outputs.items()}
