"""Generators of tiny, valid SentEval data trees for tests (and the CI workflow config)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from consert.data.senteval import SICK_SPLITS, STS_YEAR_SUBSETS, SentEvalData

_WORDS = (
    "a man woman dog cat is are playing running eating guitar piano ball park street the on in with "
    "small big red blue child children car bike rides sings walks"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9))) + " ."


def write_senteval_tree(root: Path, pairs_per_file: int = 6, seed: int = 0) -> Path:
    """Write a valid SentEval layout under ``root/downstream`` with random sentences; return ``root``.

    Every STS year has all its subsets; every other gold line of STS15/16 is blank (unscored).
    """
    rng = random.Random(seed)
    sts = root / "downstream" / "STS"
    for year, subsets in STS_YEAR_SUBSETS.items():
        folder = sts / f"{year}-en-test"
        folder.mkdir(parents=True)
        for subset in subsets:
            inputs, golds = [], []
            for i in range(pairs_per_file):
                inputs.append(f"{_sentence(rng)}\t{_sentence(rng)}")
                unscored = year in ("STS15", "STS16") and i % 2 == 1
                golds.append("" if unscored else f"{rng.uniform(0, 5):.3f}")
            (folder / f"STS.input.{subset}.txt").write_text("\n".join(inputs) + "\n")
            (folder / f"STS.gs.{subset}.txt").write_text("\n".join(golds) + "\n")
    stsb = sts / "STSBenchmark"
    stsb.mkdir()
    for split in ("train", "dev", "test"):
        rows = [
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{rng.uniform(0, 5):.3f}\t{_sentence(rng)}\t{_sentence(rng)}"
            for i in range(pairs_per_file)
        ]
        (stsb / f"sts-{split}.csv").write_text("\n".join(rows) + "\n")
    sick = root / "downstream" / "SICK"
    sick.mkdir(parents=True)
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
    labels = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
    for filename in SICK_SPLITS.values():
        rows = [
            f"{i}\t{_sentence(rng)}\t{_sentence(rng)}\t{rng.uniform(1, 5):.1f}\t{labels[i % 3]}"
            for i in range(pairs_per_file)
        ]
        (sick / filename).write_text("\n".join([header, *rows]) + "\n")
    return root


def tiny_bert(
    vocab_size: int, hidden_size: int, layers: int, heads: int, intermediate_size: int, dropout: bool = False
):
    """A randomly initialised BERT of the given shape (torch seeded with 0 first), dropout 0 unless asked."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    rates = {} if dropout else {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate_size,
        **rates,
    )
    return config, BertModel(config)


def padded_batch(lengths: list[int], length: int = 16, vocab: int = 300, seed: int = 1):
    """Token ids and attention mask (B x ``length``, torch longs) of rows of ``lengths`` real tokens, ids drawn in
    [5, ``vocab``) by a generator seeded with ``seed``, padding zeros."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lengths), length, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(5, vocab, (n,), generator=generator)
        mask[row, :n] = 1
    return ids, mask


def first_pairs(data: SentEvalData, count: int) -> SentEvalData:
    """``data`` cut to the first ``count`` pairs of each group (subset or split) of every set, its texts those
    pairs' sentences: the real sets' protocol on fewer pairs, for tests whose point is an equality of two paths
    rather than the scores themselves. Its fingerprint names the cut, so no vector cache of the whole sets fits it."""
    sets = {}
    for name, sts in data.sets.items():
        groups = {group: pairs[:count] for group, pairs in sts.groups.items()}
        group_texts = {
            group: [text for pair in pairs for text in (pair.sent1, pair.sent2)] for group, pairs in groups.items()
        }
        nli = {group: pairs[:count] for group, pairs in sts.nli.items()}
        sets[name] = replace(sts, groups=groups, group_texts=group_texts, nli=nli)
    return replace(data, sets=sets, file_hashes={**data.file_hashes, "first_pairs": str(count)})
