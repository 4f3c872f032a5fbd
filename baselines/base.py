"""The shape every baseline shares: optionally ``fit`` on texts, then ``encode`` sentences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from consert.configs import Settings
from consert.encode.cache import VectorCache
from consert.encode.encoder import SentenceEncoder
from consert.encode.pooling import Pooling
from consert.provenance import EncoderIdentity


@runtime_checkable
class SentenceEmbedder(Protocol):
    """A sentence-embedding method the evaluation and the DAG treat alike."""

    name: str

    def fit(self, texts: Sequence[str]) -> SentenceEmbedder:
        """Fit whatever the method fits on ``texts`` (a no-op for methods without parameters)."""

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        """N x d float array of sentence vectors."""

    def describe(self) -> dict[str, object]:
        """Provenance columns: model, setting, pooling, method settings."""


@dataclass(frozen=True)
class BaselineOptions:
    """What a baseline is built with besides the encoder's pooled vectors: every class's ``build(vectors, options)``
    takes it."""

    #: Its own settings, of its record's :attr:`~baselines.BaselineSpec.settings` class (whitening's k, GloVe's
    #: file, BERT-flow's flow); None for a baseline without settings.
    settings: Settings | None = None
    #: Show progress bars while encoding and fitting.
    progress: bool = True


class CachedPooledVectors:
    """Pooled vectors of one encoder and pooling, each distinct sentence encoded once and remembered.

    Baselines that fit on one set of texts and evaluate on another (whitening, flow) share this
    cache, so a sentence that is in both is encoded once.
    """

    def __init__(self, encoder: SentenceEncoder, pooling: str, progress: bool = True):
        self.encoder, self.pooling, self.progress = encoder, str(Pooling.parse(pooling)), progress
        self._cache: dict[str, np.ndarray] = {}

    def preload(self, cache: VectorCache) -> CachedPooledVectors:
        """Take this pooling's vectors from a vector cache made with the same model and data."""
        if self.pooling not in cache.vectors:
            raise KeyError(f"pooling {self.pooling} not in the vector cache (has {sorted(cache.vectors)})")
        self._cache.update(zip(cache.sentences, cache.vectors[self.pooling], strict=True))
        return self

    def __call__(self, sentences: Sequence[str]) -> np.ndarray:
        missing = [s for s in dict.fromkeys(sentences) if s not in self._cache]
        if missing:
            matrix = self.encoder.encode(missing, self.pooling, progress=self.progress)
            self._cache.update(zip(missing, matrix, strict=True))
        if not sentences:
            return np.zeros((0, self.encoder.model.config.hidden_size), dtype=np.float32)
        return np.stack([self._cache[s] for s in sentences])

    def describe(self) -> dict[str, object]:
        resolved = self.encoder.resolved
        return {
            "model": resolved.name if resolved else "in-memory",
            "base_model": resolved.base_model if resolved else "in-memory",
            "identity": resolved.identity if resolved else EncoderIdentity("", "weights held in memory"),
            "model_sha256": resolved.weights_sha256 if resolved else "unknown",
            "setting": resolved.setting if resolved else "unknown",
            "pooling": self.pooling,
            "max_length": self.encoder.max_length,
            "dtype": self.encoder.dtype,
            "engine": self.encoder.engine,
            "precision": self.encoder.precision.describe(),
            "device": self.encoder.device,
        }
