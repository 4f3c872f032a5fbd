"""A content-addressed cache of pooled sentence vectors: encode a corpus once, reuse it everywhere.

One encoding pass over every distinct text of the data (the unlabeled STS corpus contains every
evaluation sentence) yields the vectors of every requested pooling and, optionally, the token
statistics of top-k masking (:mod:`consert.encode.rank_sums`). The evaluation of each pooling, the
whitening fits, the flow fit, the top-k curve and the per-pair predictions of that model all read
this cache instead of running the model again. The cache records the key it was made with
(weights sha256, data fingerprint, max length, dtype); loading it for a different key is an error,
never a silent reuse.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from consert.encode.encoder import SentenceEncoder
from consert.encode.pooling import Pooling
from consert.encode.rank_sums import RankSumCollector, TokenRankSums
from consert.io import atomic_path

_RANK_SUMS = "topk:"


@dataclass
class VectorCache:
    """Vectors of ``sentences`` for each pooling, and the key that says how they were made."""

    sentences: list[str]
    vectors: dict[str, np.ndarray]
    key: dict[str, object]
    rank_sums: TokenRankSums | None = None

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
        rank_sums: RankSumCollector | None = None,
    ) -> VectorCache:
        """Encode the distinct ``sentences`` once with every pooling (and collect ``rank_sums``)."""
        unique = list(dict.fromkeys(sentences))
        if rank_sums is not None and not set(rank_sums.sentences) <= set(unique):
            raise ValueError("the top-k statistics are asked for sentences that are not among those encoded")
        observers = [rank_sums] if rank_sums is not None else []
        vectors = encoder.encode_poolings(unique, poolings, progress=progress, observers=observers)
        statistics = rank_sums.result() if rank_sums is not None else None
        return cls(unique, vectors, cache_key(encoder, data_sha256), statistics)

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
        if self.rank_sums is not None:
            arrays.update(self.rank_sums.to_arrays(_RANK_SUMS))
        with atomic_path(path) as temporary:
            with open(temporary, "wb") as handle:
                np.savez(
                    handle, sentences=np.array(json.dumps(self.sentences)), key=np.array(json.dumps(self.key)), **arrays
                )
        return Path(path)

    def check_key(self, expected_key: dict[str, object], source: str = "vector cache") -> None:
        """Refuse vectors made from other weights, data or settings than ``expected_key`` says."""
        if self.key != expected_key:
            changed = sorted(k for k in set(self.key) | set(expected_key) if self.key.get(k) != expected_key.get(k))
            made_with = {k: self.key.get(k) for k in changed}
            raise ValueError(
                f"{source}: vector cache was made with other {changed} (it has {made_with}); "
                "pass the settings it was made with, or make it again"
            )

    @classmethod
    def load(
        cls,
        path: str | Path,
        expected_key: dict[str, object] | None = None,
        rank_sums: bool = False,
        poolings: Sequence[str] | None = None,
    ) -> VectorCache:
        """Read a cache; with ``expected_key``, refuse one made from other weights, data or settings.

        Only the vectors of ``poolings`` are read (all by default); the top-k statistics only with
        ``rank_sums=True`` (an error if the cache has none).
        """
        try:
            return cls._read(path, expected_key, rank_sums, poolings)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, TypeError) as err:
            if isinstance(err, (KeyError, ValueError)) and str(path) in str(err):  # its own line, naming the file
                raise
            if isinstance(err, FileNotFoundError):
                raise OSError(f"{path}: no such vector cache (`consert encode` makes one)") from None
            raise ValueError(
                f"{path}: not a readable vector cache ({type(err).__name__}: {' '.join(str(err).split())[:160]}); "
                "make it again with `consert encode`"
            ) from None

    @classmethod
    def _read(cls, path, expected_key, rank_sums, poolings) -> VectorCache:
        with np.load(path, allow_pickle=False) as archive:
            cache = cls(json.loads(str(archive["sentences"])), {}, json.loads(str(archive["key"])))
            if expected_key is not None:
                cache.check_key(expected_key, str(path))
            stored = sorted(n.removeprefix("pooling:") for n in archive.files if n.startswith("pooling:"))
            wanted = None if poolings is None else {f"pooling:{Pooling.parse(p)}" for p in poolings}
            for name in sorted(wanted or ()):
                if name not in archive.files:
                    raise KeyError(f"{path}: pooling {name.removeprefix('pooling:')} not in the cache (has {stored})")
            cache.vectors = {
                name.removeprefix("pooling:"): archive[name]
                for name in archive.files
                if name.startswith("pooling:") and (wanted is None or name in wanted)
            }
            for name, matrix in cache.vectors.items():  # a cache cut short, or written for other sentences
                if matrix.ndim != 2 or len(matrix) != len(cache.sentences):
                    raise ValueError(
                        f"{path}: pooling {name} holds {len(matrix)} vectors of shape {matrix.shape[1:]} for "
                        f"{len(cache.sentences)} sentences; make the cache again with `consert encode`"
                    )
            if rank_sums:
                if f"{_RANK_SUMS}sums" not in archive.files:
                    raise ValueError(f"{path}: no top-k statistics in this cache (make it with --topk-max)")
                cache.rank_sums = TokenRankSums.from_arrays(archive, _RANK_SUMS)
            return cache


def cache_key(encoder: SentenceEncoder, data_sha256: str) -> dict[str, object]:
    """What the vectors depend on: weights, data, max length and dtype."""
    resolved = encoder.resolved
    return {
        "model_sha256": resolved.weights_sha256 if resolved else "in-memory",
        "data_sha256": data_sha256,
        "max_length": encoder.max_length,
        "dtype": encoder.dtype,
    }
