"""Top-k frequency masking (ConSERT Section 5.1, Figure 4).

Token frequencies are counted on the STS-B test split with the model's tokenizer ([CLS] and [SEP]
come first: every sentence has one of each). For each k the sentence vector averages only the
tokens outside the k most frequent. One encoding pass serves every k: the token vectors of each
batch are re-pooled with one mask per k.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from consert.data import SentEvalData
from consert.encode import SentenceEncoder
from consert.evaluate import evaluate_vectors, evaluation_sentences
from consert.pooling import PAPER_POOLING, Pooling, masked_mean


def frequency_ranking(tokenizer, sentences: Sequence[str], max_length: int = 64) -> list[int]:
    """Token ids by descending frequency in ``sentences`` (special tokens included; ties by id)."""
    counts: Counter[int] = Counter()
    for ids in tokenizer(list(sentences), truncation=True, max_length=max_length)["input_ids"]:
        counts.update(ids)
    return [token for token, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def stsb_test_ranking(encoder: SentenceEncoder, data: SentEvalData) -> list[int]:
    """The paper's ranking: frequencies on the STS-B test split (both sentences of every pair)."""
    pairs = data.sets["STSb"].groups["test"]
    return frequency_ranking(encoder.tokenizer, [s for p in pairs for s in (p.sent1, p.sent2)], encoder.max_length)


def topk_masked_vectors(
    encoder: SentenceEncoder,
    sentences: Sequence[str],
    ranking: Sequence[int],
    ks: Sequence[int],
    pooling: str = PAPER_POOLING,
    progress: bool = True,
) -> dict[int, np.ndarray]:
    """``{k: N x d}``: mean pooling of ``sentences`` without the top-k tokens of ``ranking``, one pass."""
    spec = Pooling.parse(pooling)
    if spec.kind != "mean":
        raise ValueError(f"top-k masking removes tokens from an average; pooling {spec} is not a mean")
    unique = list(dict.fromkeys(sentences))
    vocabulary = max(len(encoder.tokenizer), max(ranking, default=0) + 1)
    rank_of = torch.full((vocabulary,), len(ranking), dtype=torch.long)
    rank_of[torch.as_tensor(list(ranking), dtype=torch.long)] = torch.arange(len(ranking))
    dim = encoder.model.config.hidden_size
    out = {k: np.zeros((len(unique), dim), dtype=np.float32) for k in ks}
    for rows, hidden, batch in encoder.forward_batches(unique, spec.needs_all_hidden_states, progress):
        spec.check_layers(len(hidden))
        tokens = torch.stack([hidden[i] for i in spec.layers]).float().mean(0)
        ranks = rank_of.to(tokens.device)[batch["input_ids"]]
        for k in ks:
            keep = batch["attention_mask"].bool() & (ranks >= k)
            out[k][rows] = masked_mean(tokens, keep).cpu().numpy()
    row_of = {s: i for i, s in enumerate(unique)}
    index = np.array([row_of[s] for s in sentences], dtype=np.int64)
    return {k: matrix[index] for k, matrix in out.items()}


def topk_curve(
    encoder: SentenceEncoder, data: SentEvalData, ks: Sequence[int], pooling: str = PAPER_POOLING, progress: bool = True
) -> pd.DataFrame:
    """Per-dataset and average Spearman for every k (rows: k, dataset, spearman, ...)."""
    sentences = evaluation_sentences(data)
    ranking = stsb_test_ranking(encoder, data)
    vectors = topk_masked_vectors(encoder, sentences, ranking, ks, pooling, progress)
    frames = []
    for k in ks:
        frame = evaluate_vectors(data, dict(zip(sentences, vectors[k], strict=True)))
        removed = encoder.tokenizer.convert_ids_to_tokens(list(ranking[:k]))
        frames.append(frame[frame.subset == "all"].assign(k=k, removed_tokens=" ".join(removed[-1:]) if k else ""))
    return pd.concat(frames, ignore_index=True)
