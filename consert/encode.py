"""Sentence encoding: each distinct sentence once, length-sorted batches, any number of poolings.

One forward pass per batch serves every requested pooling, so a model's hidden states are computed
once however many poolings (and baselines built on them) are evaluated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .models import ResolvedModel, default_device, load_tokenizer_and_model, resolve_model
from .pooling import PAPER_POOLING, Pooling

DTYPES = ("fp32", "bf16")

BatchObserver = Callable[[Sequence[str], tuple[torch.Tensor, ...], dict[str, torch.Tensor]], None]


def autocast(device: str, dtype: str):
    """bf16 autocast context on CPU or CUDA for ``dtype == 'bf16'``; a no-op for fp32."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {DTYPES}")
    if dtype == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)


class SentenceEncoder:
    """A Hugging Face encoder (tokenizer + ``AutoModel``) that turns sentences into pooled vectors.

    Use :meth:`load` to build one from a hub id or local directory; the constructor wraps an
    in-memory model (e.g. one being trained). The model's train/eval mode is restored after encoding.

    Args:
        max_length: tokens per sentence after truncation (the paper uses 64).
        dtype: ``fp32`` or ``bf16`` (autocast; pooled vectors are returned as float32).
        batch_size: sentences per forward pass.
        resolved: where the weights came from (for provenance), if known.
    """

    def __init__(
        self,
        tokenizer,
        model: torch.nn.Module,
        *,
        max_length: int = 64,
        dtype: str = "fp32",
        batch_size: int = 128,
        resolved: ResolvedModel | None = None,
    ):
        self.tokenizer, self.model = tokenizer, model
        self.max_length, self.dtype, self.batch_size = max_length, dtype, batch_size
        self.resolved = resolved
        autocast(self.device, dtype)  # validate early

    @classmethod
    def load(
        cls,
        model: str | ResolvedModel,
        max_length: int = 64,
        dtype: str = "fp32",
        device: str | None = None,
        batch_size: int = 128,
    ) -> SentenceEncoder:
        """Load ``model`` (hub id, local directory or resolved model) for encoding on ``device``.

        For inference-only use with ``dtype='bf16'`` the weights themselves are cast to bf16, which
        avoids autocast's per-op casts (about 20% faster on CPU; Spearman within 0.02 of fp32 here).
        """
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model)
        tokenizer, network = load_tokenizer_and_model(resolved, device or default_device())
        if dtype == "bf16":
            network = network.to(torch.bfloat16)
        return cls(tokenizer, network, max_length=max_length, dtype=dtype, batch_size=batch_size, resolved=resolved)

    @property
    def device(self) -> str:
        """Device type the model lives on (``cpu`` or ``cuda``)."""
        return next(self.model.parameters()).device.type

    def encode(self, sentences: Sequence[str], pooling: str = PAPER_POOLING, progress: bool = True) -> np.ndarray:
        """Encode ``sentences`` (N) into an N x d float32 array with one pooling."""
        return self.encode_poolings(sentences, [pooling], progress=progress)[str(Pooling.parse(pooling))]

    def encode_poolings(
        self,
        sentences: Sequence[str],
        poolings: Sequence[str],
        progress: bool = True,
        observers: Sequence[BatchObserver] = (),
    ) -> dict[str, np.ndarray]:
        """Encode ``sentences`` once and return ``{pooling name: N x d float32 array}``.

        Duplicate sentences are encoded once; batches are sorted by token length so that padding
        is minimal; padding positions are masked in every mean pooling. Each of ``observers`` is
        called with every batch's sentences, hidden states and padded batch (for statistics that
        need token vectors, such as :class:`consert.rank_sums.RankSumCollector`).
        """
        specs = [Pooling.parse(p) for p in poolings]
        dim = self.model.config.hidden_size
        unique = list(dict.fromkeys(sentences))
        outputs = {spec: np.zeros((len(unique), dim), dtype=np.float32) for spec in specs}
        need_all = bool(observers) or any(spec.needs_all_hidden_states for spec in specs)
        for rows, hidden, batch in self.forward_batches(unique, need_all, progress):
            for spec in specs:
                outputs[spec][rows] = spec(hidden, batch["attention_mask"]).float().cpu().numpy()
            for observe in observers:
                observe([unique[row] for row in rows], hidden, batch)
        row_of = {sentence: row for row, sentence in enumerate(unique)}
        rows = np.fromiter((row_of[s] for s in sentences), dtype=np.int64, count=len(sentences))
        return {str(spec): matrix[rows] for spec, matrix in outputs.items()}

    def forward_batches(
        self, unique: Sequence[str], all_hidden_states: bool = True, progress: bool = True
    ) -> Iterator[tuple[np.ndarray, tuple[torch.Tensor, ...], dict[str, torch.Tensor]]]:
        """Run the model over ``unique`` sentences in length-sorted batches (eval mode, no grad).

        Yields ``(rows, hidden_states, batch)``: the rows of ``unique`` in the batch, the hidden
        states (all layers, or only the last one), and the padded ``input_ids``/``attention_mask``.
        """
        token_ids = (
            self.tokenizer(list(unique), truncation=True, max_length=self.max_length)["input_ids"] if unique else []
        )
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")[::-1]
        was_training = self.model.training
        self.model.eval()
        try:
            weights_are_bf16 = next(self.model.parameters()).dtype == torch.bfloat16
            with torch.inference_mode(), autocast(self.device, "fp32" if weights_are_bf16 else self.dtype):
                starts = range(0, len(order), self.batch_size)
                for start in tqdm(starts, desc="encoding", unit="batch", disable=not progress, leave=False):
                    rows = order[start : start + self.batch_size]
                    batch = self.tokenizer.pad({"input_ids": [token_ids[i] for i in rows]}, return_tensors="pt")
                    batch = {key: value.to(self.model.device) for key, value in batch.items()}
                    out = self.model(**batch, output_hidden_states=all_hidden_states)
                    yield rows, (out.hidden_states if all_hidden_states else (out.last_hidden_state,)), batch
        finally:
            self.model.train(was_training)
