"""BERT-whitening (Su et al., 2021): y = (x - mu) W[:, :k] with W = U diag(1 / sqrt(s)), Sigma = U S U^T."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from consert.configs import AtLeastOne, Settings, key

if TYPE_CHECKING:  # for annotations only: .base imports the encoder (torch), and the command line reads the settings
    from .base import BaselineOptions, CachedPooledVectors


class WhiteningSettings(Settings):
    """BERT-whitening's one setting (the command line's ``--k``; the workflow gives each row its own)."""

    k: AtLeastOne | None = key("top principal directions kept; null keeps all (the authors' rows: all and 256)", None)


def principal_axes(covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``U`` and ``s`` of ``Sigma = U diag(s) U^T``, by SVD as the authors (``np.linalg.svd``: LAPACK's divide and
    conquer, gesdd); where that does not converge, which it can on a rank-deficient covariance of a small task (a
    384 x 384 one of rank 59 did), by LAPACK's QR iteration (gesvd), which does. The singular values are the same;
    a column of ``U`` may change its sign, which no cosine of the whitened vectors sees."""
    try:
        u, s, _ = np.linalg.svd(covariance)
    except np.linalg.LinAlgError:
        import scipy.linalg

        u, s, _ = scipy.linalg.svd(covariance, lapack_driver="gesvd")
    return u, s


@dataclass
class WhiteningTransform:
    """A fitted whitening: mean ``mu`` (d) and the d x k matrix ``W``."""

    mu: np.ndarray
    W: np.ndarray

    @classmethod
    def fit(cls, vectors: np.ndarray, k: int | None = None) -> WhiteningTransform:
        """Fit on an N x d array; keep the top-``k`` principal directions (all when None)."""
        x = np.asarray(vectors, dtype=np.float64)
        if x.ndim != 2 or len(x) < 2:
            raise ValueError(f"whitening needs an N x d array with N >= 2, got shape {x.shape}")
        mu = x.mean(axis=0)
        covariance = np.cov(x - mu, rowvar=False)
        u, s = principal_axes(covariance)
        k = x.shape[1] if k is None else k
        if not 1 <= k <= x.shape[1]:
            raise ValueError(f"whitening dimension k={k} must be in 1..{x.shape[1]}")
        return cls(mu, u[:, :k] / np.sqrt(np.maximum(s[:k], 1e-12)))

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        """Whiten an N x d array into N x k."""
        return (np.asarray(vectors, dtype=np.float64) - self.mu) @ self.W


class WhiteningBaseline:
    """Pooled encoder vectors, whitened with mu and W fitted on the ``fit`` texts (the authors: per task)."""

    def __init__(self, vectors: CachedPooledVectors, k: int | None = None):
        self.vectors, self.k = vectors, k
        self.transform: WhiteningTransform | None = None
        self.name = f"whitening[{vectors.pooling}, k={k or 'all'}]"

    @classmethod
    def build(cls, vectors: CachedPooledVectors | None, options: BaselineOptions) -> WhiteningBaseline:
        """The registry's construction (:data:`baselines.BASELINE_SPECS`): the pooled vectors and its settings' k."""
        return cls(vectors, options.settings.k)

    def fit(self, texts: Sequence[str]) -> WhiteningBaseline:
        self.transform = WhiteningTransform.fit(self.vectors(list(texts)), self.k)
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        if self.transform is None:
            raise RuntimeError("fit the whitening before encoding")
        return self.transform.transform(self.vectors(sentences))

    def describe(self) -> dict[str, object]:
        return {"method": self.name, "whitening_k": self.k or "all", **self.vectors.describe()}
