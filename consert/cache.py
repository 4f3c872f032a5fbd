"""A content-addressed cache of pooled sentence vectors: encode a corpus once, reuse it everywhere.

One encoding pass over every distinct text of the data (the unlabeled STS corpus contains every
evaluation sentence) yields the vectors of every requested pooling. The evaluation of each pooling,
the whitening fits, the flow fit and the top-k curve of that model all read this cache instead of
running the model again. The cache records the key it was made with (weights sha256, data
fingerprint, max length, dtype); loading it for a different key is an error, never a silent reuse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .encode import SentenceEncoder
from .io import atomic_path
from .pooling import Pooling


@dataclass
class VectorCache:
    """Vectors of ``sentences`` for each pooling, and the key that says how they were made."""

    sentences: list[str]
    vectors: dict[str, np.ndarray]
    key: dict[str, object]

    def __post_init__(self) -> None:
        self._row = {sentence: row for row, sentence in enumerate(self.sentences)}

    @classmethod
    def build(
        cls,
        encoder: SentenceEncoder,
        sentences: Sequence[str],
        poolings: Sequence[str],
        data_sha256: str,
        progress: bool = True,
    ) -> VectorCache:
        """Encode the distinct ``sentences`` once with every pooling."""
        unique = list(dict.fromkeys(sentences))
        vectors = encoder.encode_poolings(unique, poolings, progress=progress)
        return cls(unique, vectors, cache_key(encoder, data_sha256))

    def lookup(self, sentences: Sequence[str], pooling: str) -> np.ndarray:
        """N x d vectors of ``sentences`` with ``pooling``; KeyError names what is missing."""
        name = str(Pooling.parse(pooling))
        if name not in self.vectors:
            raise KeyError(f"pooling {name} not in the cache (has {sorted(self.vectors)})")
        missing = [s for s in sentences if s not in self._row]
        if missing:
            raise KeyError(f"{len(missing)} sentences not in the cache, e.g. {missing[0]!r}")
        return self.vectors[name][[self._row[s] for s in sentences]]

    def save(self, path: str | Path) -> Path:
        """Write atomically as ``.npz`` (vectors as float32, sentences and key as JSON)."""
        arrays = {f"pooling:{name}": matrix.astype(np.float32) for name, matrix in self.vectors.items()}
        with atomic_path(path) as temporary:
            with open(temporary, "wb") as handle:
                np.savez(
                    handle, sentences=np.array(json.dumps(self.sentences)), key=np.array(json.dumps(self.key)), **arrays
                )
        return Path(path)

    @classmethod
    def load(cls, path: str | Path, expected_key: dict[str, object] | None = None) -> VectorCache:
        """Read a cache; with ``expected_key``, refuse one made from other weights, data or settings."""
        with np.load(path, allow_pickle=False) as archive:
            key = json.loads(str(archive["key"]))
            if expected_key is not None and key != expected_key:
                changed = sorted(k for k in set(key) | set(expected_key) if key.get(k) != expected_key.get(k))
                raise ValueError(f"{path}: vector cache was made with other {changed}; delete it to re-encode")
            vectors = {
                name.removeprefix("pooling:"): archive[name] for name in archive.files if name.startswith("pooling:")
            }
            return cls(json.loads(str(archive["sentences"])), vectors, key)


def cache_key(encoder: SentenceEncoder, data_sha256: str) -> dict[str, object]:
    """What the vectors depend on: weights, data, max length and dtype."""
    resolved = encoder.resolved
    return {
        "model_sha256": resolved.weights_sha256 if resolved else "in-memory",
        "data_sha256": data_sha256,
        "max_length": encoder.max_length,
        "dtype": encoder.dtype,
    }
