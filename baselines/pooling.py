"""BERT without training: a pooling of its hidden states ([CLS], mean, last-two, first-last)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import BaselineOptions, CachedPooledVectors

#: The paper's pooling baselines, by name -> pooling spec. "first-last" exists in two published
#: meanings: ConSERT's (embedding output + last layer) and BERT-whitening's (first layer + last).
POOLING_BASELINES = {
    "cls": "cls",
    "mean": "mean",
    "last2": "mean:-2,-1",
    "first-last-consert": "mean:0,-1",
    "first-last-whitening": "mean:1,-1",
}


class PoolingBaseline:
    """Encode with a fixed pooling of an untrained encoder; nothing to fit."""

    def __init__(self, vectors: CachedPooledVectors):
        self.vectors = vectors
        self.name = f"pooling[{vectors.pooling}]"

    @classmethod
    def build(cls, vectors: CachedPooledVectors | None, options: BaselineOptions) -> PoolingBaseline:
        """The registry's construction (:data:`baselines.BASELINE_SPECS`): the pooled vectors are all it takes."""
        return cls(vectors)

    def fit(self, texts: Sequence[str]) -> PoolingBaseline:
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        return self.vectors(sentences)

    def describe(self) -> dict[str, object]:
        return {"method": self.name, **self.vectors.describe()}
