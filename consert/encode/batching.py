"""Token ids computed once per text, and padded batches built from them.

Tokenizing is the same work every time a text comes back (each epoch, each dev evaluation), and a
batch's tokenizer call holds the training step up on the CPU. :class:`TokenCache` tokenizes each
distinct text once (truncated to ``max_length``, special tokens included, exactly as one tokenizer
call with ``truncation=True`` would) and pads batches from the stored ids: right padding with the
tokenizer's pad id, to the batch's longest row, optionally rounded up to a multiple (16 on CUDA, so
that the shapes of compiled kernels repeat). Padding never changes a result: every pooling and
attention masks it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

#: Batches on CUDA are padded to a multiple of this (a handful of distinct shapes for compiled kernels).
CUDA_PAD_MULTIPLE = 16


def pad_multiple(device: str) -> int:
    """The padding multiple for ``device``: 16 on CUDA, none (1) on a CPU, where every token costs."""
    return CUDA_PAD_MULTIPLE if torch.device(device).type == "cuda" else 1


class TokenCache:
    """Token ids of texts under one tokenizer and ``max_length``, each text tokenized once."""

    def __init__(self, tokenizer, max_length: int):
        self.tokenizer, self.max_length = tokenizer, max_length
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._ids: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The ids of each text (tokenizing the unseen ones in one call)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._ids]
        if missing:
            encoded = self.tokenizer(  # the ids alone: `pad` makes the mask; the model takes type ids 0
                missing,
                truncation=True,
                max_length=self.max_length,
                return_attention_mask=False,
                return_token_type_ids=False,
            )["input_ids"]
            self._ids.update(
                (text, np.asarray(ids, dtype=np.int64)) for text, ids in zip(missing, encoded, strict=True)
            )
        return [self._ids[t] for t in texts]

    def pad(self, rows: Sequence[np.ndarray], multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask)`` of rows padded on the right to the longest, rounded up to ``multiple``."""
        longest = max((len(row) for row in rows), default=0)
        length = -(-longest // multiple) * multiple
        input_ids = np.full((len(rows), length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return torch.from_numpy(input_ids), torch.from_numpy(mask)

    def batch(self, texts: Sequence[str], multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded ``(input_ids, attention_mask)`` of ``texts`` (CPU tensors)."""
        return self.pad(self.ids(texts), multiple)


def to_device(tensors: tuple[torch.Tensor, ...], device: str) -> tuple[torch.Tensor, ...]:
    """Tensors on ``device``; on CUDA copied from pinned memory without blocking the host."""
    if torch.device(device).type != "cuda":
        return tensors
    return tuple(t.pin_memory().to(device, non_blocking=True) for t in tensors)
