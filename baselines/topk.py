"""Top-k frequency masking (ConSERT Section 5.1, Figure 4).

Token frequencies are counted on the STS-B test split with the model's tokenizer ([CLS] and [SEP]
come first: every sentence has one of each). For each k the sentence vector averages only the
tokens outside the k most frequent. One encoding pass serves every k: it collects per-sentence
token sums (:mod:`consert.encode.rank_sums`), from which each k's vectors follow by subtraction; in the DAG
those statistics come from the model's vector cache, so the curve costs no encoding at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pandas as pd

from consert.data.senteval import FIGURE_TASK, SentEvalData
from consert.encode.encoder import SentenceEncoder
from consert.encode.pooling import PAPER_POOLING, Pooling
from consert.encode.rank_sums import RankSumCollector, TokenRankSums, collect_rank_sums
from consert.evaluate.protocol import evaluate_vectors, evaluation_sentences


def frequency_ranking(tokenizer, sentences: Sequence[str], max_length: int = 64) -> list[int]:
    """Token ids by descending frequency in ``sentences`` (special tokens included; ties by id)."""
    counts: Counter[int] = Counter()
    for ids in tokenizer(list(sentences), truncation=True, max_length=max_length)["input_ids"]:
        counts.update(ids)
    return [token for token, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def stsb_test_ranking(encoder: SentenceEncoder, data: SentEvalData) -> list[int]:
    """The paper's ranking: frequencies on the STS-B test split (both sentences of every pair)."""
    pairs = data.sets[FIGURE_TASK].groups["test"]
    return frequency_ranking(encoder.tokenizer, [s for p in pairs for s in (p.sent1, p.sent2)], encoder.max_length)


def topk_curve(
    encoder: SentenceEncoder,
    data: SentEvalData,
    ks: Sequence[int],
    pooling: str = PAPER_POOLING,
    progress: bool = True,
    rank_sums: TokenRankSums | None = None,
) -> pd.DataFrame:
    """Per-dataset and average Spearman for every k (rows: k, dataset, spearman, ...).

    With ``rank_sums`` (from a vector cache of the same model and data) nothing is encoded;
    otherwise the evaluation sentences are encoded once and every k is derived from that pass. The curve
    carries no representation diagnostics (the model's own evaluation has them).
    """
    sentences = evaluation_sentences(data)
    ranking = stsb_test_ranking(encoder, data)
    if rank_sums is None:
        rank_sums = collect_rank_sums(encoder, sentences, ranking[: max(ks, default=0)], pooling, progress)
    _check_rank_sums(rank_sums, ranking, pooling, max(ks, default=0))
    row_of = {sentence: row for row, sentence in enumerate(rank_sums.sentences)}
    missing = [s for s in sentences if s not in row_of]
    if missing:
        raise KeyError(f"{len(missing)} evaluation sentences have no top-k statistics, e.g. {missing[0]!r}")
    frames = []
    for k, means in rank_sums.masked_means(ks):
        vectors = {s: means[row_of[s]] for s in sentences}
        frame = evaluate_vectors(data, vectors, resamples=0, with_diagnostics=False, run=f"top-{k} masking")
        removed = encoder.tokenizer.convert_ids_to_tokens(list(ranking[:k]))
        frames.append(frame[frame.subset == "all"].assign(k=k, removed_tokens=" ".join(removed[-1:]) if k else ""))
    return pd.concat(frames, ignore_index=True)


def _check_rank_sums(rank_sums: TokenRankSums, ranking: Sequence[int], pooling: str, max_k: int) -> None:
    """Refuse statistics of another pooling, a shorter ranking or another ranking than this data's."""
    if rank_sums.pooling != str(Pooling.parse(pooling)):
        raise ValueError(f"top-k statistics were collected for pooling {rank_sums.pooling}, not {pooling}")
    if rank_sums.max_k < max_k:
        raise ValueError(f"top-k statistics cover k <= {rank_sums.max_k}; k = {max_k} was asked for")
    if list(rank_sums.ranking) != list(ranking[: rank_sums.max_k]):
        raise ValueError("top-k statistics were collected with another token ranking (other tokenizer or data)")


def topk_collector(
    encoder: SentenceEncoder, data: SentEvalData, max_k: int, pooling: str = PAPER_POOLING
) -> RankSumCollector:
    """A collector of the top-k statistics of every evaluation sentence, for a vector cache's pass."""
    return RankSumCollector(evaluation_sentences(data), stsb_test_ranking(encoder, data)[:max_k], pooling)
