"""Top-k masking from one encoding pass, kept small enough to cache.

Top-k masking (ConSERT Section 5.1, Figure 4) averages a sentence's token vectors without the
tokens whose ids are among the k most frequent. Knowing, for each sentence, the sum of all its
token vectors, its token count, and for each of the K most frequent ids that occur in it the sum
and count of that id's vectors, the masked mean for every k <= K follows by subtraction. The
statistics take about six vectors per sentence for K = 50 (against 51 for the curve's vectors),
so they are stored in the vector cache beside the pooled vectors and every top-k curve of a model
reuses the pass that encoded it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from consert.encode.pooling import PAPER_POOLING, Pooling


@dataclass
class TokenRankSums:
    """Per-sentence token-vector sums of one mean pooling, split off for the K most frequent ids.

    Attributes:
        pooling: the mean pooling whose token vectors (average of its layers) are summed.
        ranking: the K token ids that can be masked, most frequent first.
        sentences: the N sentences, one row each.
        totals: N x d sums over every token of each sentence (padding excluded).
        lengths: N token counts.
        rows, ranks, counts, sums: one entry per (sentence, ranked id present in it): the sentence
            row, the id's rank (< K), how many times it occurs and the M x d sum of its vectors.
    """

    pooling: str
    ranking: np.ndarray
    sentences: list[str]
    totals: np.ndarray
    lengths: np.ndarray
    rows: np.ndarray
    ranks: np.ndarray
    counts: np.ndarray
    sums: np.ndarray

    @property
    def max_k(self) -> int:
        """The largest k this can mask."""
        return len(self.ranking)

    def masked_means(self, ks: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(k, N x d float32)`` for each k in ascending order: the mean without the top-k ids.

        A sentence left with no token gets a zero vector, as :func:`consert.encode.pooling.masked_mean` gives.
        """
        wanted = sorted(set(ks))
        if wanted and (wanted[0] < 0 or wanted[-1] > self.max_k):
            raise ValueError(f"k must be in [0, {self.max_k}] (the statistics hold the top {self.max_k}); got {wanted}")
        current = self.totals.astype(np.float32, copy=True)
        remaining = self.lengths.astype(np.float32, copy=True)
        by_rank = np.argsort(self.ranks, kind="stable")
        bounds = np.searchsorted(self.ranks[by_rank], np.arange(self.max_k + 1))
        removed = 0
        for k in wanted:
            for rank in range(removed, k):
                entries = by_rank[bounds[rank] : bounds[rank + 1]]  # one per sentence: rows are distinct
                current[self.rows[entries]] -= self.sums[entries]
                remaining[self.rows[entries]] -= self.counts[entries]
            removed = k
            means = current / np.maximum(remaining, 1e-9)[:, None]
            means[remaining == 0] = 0.0
            yield k, means

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The statistics as named arrays (for ``np.savez``)."""
        return {
            f"{prefix}pooling": np.array(self.pooling),
            f"{prefix}sentences": np.array(json.dumps(self.sentences)),
            **{f"{prefix}{name}": getattr(self, name) for name in _ARRAYS},
        }

    @classmethod
    def from_arrays(cls, arrays, prefix: str) -> TokenRankSums:
        """Inverse of :meth:`to_arrays` (``arrays`` may be an open ``np.load`` archive)."""
        return cls(
            pooling=str(arrays[f"{prefix}pooling"]),
            sentences=json.loads(str(arrays[f"{prefix}sentences"])),
            **{name: arrays[f"{prefix}{name}"] for name in _ARRAYS},
        )


_ARRAYS = ("ranking", "totals", "lengths", "rows", "ranks", "counts", "sums")


class RankSumCollector:
    """Builds :class:`TokenRankSums` for ``sentences`` from the batches of an encoding pass.

    Call it with each batch's sentences, hidden states and padded batch (the observer signature of
    :meth:`consert.encode.encoder.SentenceEncoder.encode_poolings`); sentences it was not asked about are
    skipped. :meth:`result` fails if any asked-for sentence never came by.
    """

    def __init__(self, sentences: Sequence[str], ranking: Sequence[int], pooling: str = PAPER_POOLING):
        self.spec = Pooling.parse(pooling)
        if self.spec.kind != "mean":
            raise ValueError(f"top-k masking removes tokens from an average; pooling {self.spec} is not a mean")
        self.ranking = np.asarray(ranking, dtype=np.int64)
        if len(set(self.ranking.tolist())) != len(self.ranking):
            raise ValueError("the ranking lists a token id twice")
        self.sentences = list(dict.fromkeys(sentences))
        self._slot = {sentence: slot for slot, sentence in enumerate(self.sentences)}
        self._rank_of = torch.full((int(self.ranking.max(initial=0)) + 1,), len(self.ranking), dtype=torch.long)
        self._rank_of[torch.from_numpy(self.ranking)] = torch.arange(len(self.ranking))
        self._totals: np.ndarray | None = None
        self._lengths = np.full(len(self.sentences), -1, dtype=np.int64)
        self._entries: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def __call__(
        self, batch_sentences: Sequence[str], hidden: Sequence[torch.Tensor], batch: dict[str, torch.Tensor]
    ) -> None:
        slots = np.array([self._slot.get(s, -1) for s in batch_sentences], dtype=np.int64)
        keep = np.flatnonzero(slots >= 0)
        if len(keep) == 0:
            return
        self.spec.check_layers(len(hidden))
        picked = torch.from_numpy(keep).to(hidden[0].device)
        tokens = torch.stack([hidden[i][picked] for i in self.spec.layers]).float().mean(0)
        mask = batch["attention_mask"][picked].bool()
        ids = batch["input_ids"][picked]
        # the same arithmetic as masked_mean, so that k = 0 reproduces the plain mean pooling exactly
        totals = (tokens * mask.to(tokens.dtype).unsqueeze(-1)).sum(1)
        if self._totals is None:
            self._totals = np.zeros((len(self.sentences), tokens.shape[-1]), dtype=np.float32)
        self._totals[slots[keep]] = totals.cpu().numpy()
        self._lengths[slots[keep]] = mask.sum(1).cpu().numpy()
        rank_of = self._rank_of.to(ids.device)
        known = ids < len(rank_of)
        ranks = torch.where(known, rank_of[ids.clamp(max=len(rank_of) - 1)], len(self.ranking))
        sentence, position = torch.nonzero(mask & (ranks < len(self.ranking)), as_tuple=True)
        key = sentence * len(self.ranking) + ranks[sentence, position]
        unique_keys, inverse = torch.unique(key, return_inverse=True)
        sums = torch.zeros(len(unique_keys), tokens.shape[-1], dtype=tokens.dtype, device=tokens.device)
        sums.index_add_(0, inverse, tokens[sentence, position])
        counts = torch.bincount(inverse, minlength=len(unique_keys))
        unique_keys = unique_keys.cpu().numpy()
        self._entries.append(
            (
                slots[keep][unique_keys // len(self.ranking)],
                unique_keys % len(self.ranking),
                counts.cpu().numpy(),
                sums.cpu().numpy(),
            )
        )

    def result(self) -> TokenRankSums:
        """The collected statistics."""
        missing = np.flatnonzero(self._lengths < 0)
        if len(missing):
            raise ValueError(f"{len(missing)} sentences were never encoded, e.g. {self.sentences[missing[0]]!r}")
        rows, ranks, counts, sums = (
            (np.concatenate(parts) for parts in zip(*self._entries, strict=True))
            if self._entries
            else (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32))
        )
        totals = self._totals if self._totals is not None else np.zeros((0, 0), dtype=np.float32)
        return TokenRankSums(
            str(self.spec), self.ranking, self.sentences, totals, self._lengths, rows, ranks, counts, sums
        )


def collect_rank_sums(
    encoder, sentences: Sequence[str], ranking: Sequence[int], pooling: str = PAPER_POOLING, progress: bool = True
) -> TokenRankSums:
    """Encode ``sentences`` once (a :class:`consert.encode.encoder.SentenceEncoder`) and collect the statistics."""
    collector = RankSumCollector(sentences, ranking, pooling)
    unique = collector.sentences
    for rows, hidden, batch in encoder.forward_batches(unique, collector.spec.needs_all_hidden_states, progress):
        collector([unique[row] for row in rows], hidden, batch)
    return collector.result()
