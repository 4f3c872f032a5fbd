"""The unlabeled texts an unsupervised stage trains on, and the authors' few-shot subsets of them."""

from __future__ import annotations

import random
from pathlib import Path

from consert.data.inputs import ExternalInput, file_input
from consert.data.senteval import SentEvalData
from consert.train.config import TrainConfig


def corpus_inputs(config: TrainConfig) -> list[ExternalInput]:
    """The corpus file an unsupervised stage reads ([] for the STS texts, read with the sets)."""
    return [] if config.train_texts == "sts" else [file_input(config.train_texts, "train_texts")]


def training_texts(config: TrainConfig, data: SentEvalData) -> list[str]:
    """The unlabeled texts (STS corpus or a file), subsampled to ``n_texts`` with the run's seed."""
    if config.train_texts == "sts":
        texts = data.unlabeled_texts()
    else:
        path = Path(config.train_texts)
        if not path.is_file():
            hint = " (`consert download-data --wiki1m` fetches SimCSE's)" if "wiki1m" in path.name else ""
            raise FileNotFoundError(f"train_texts: {path} not found (expected one text per line){hint}")
        texts = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if config.n_texts is not None and config.n_texts < len(texts):
        texts = few_shot_texts(texts, config.n_texts, config.seed, config.upsample)
    return texts


def few_shot_texts(texts: list[str], n: int, seed: int, upsample: bool = True) -> list[str]:
    """The ConSERT authors' few-shot corpus (``main.py --data_proportion p --do_upsampling``): the whole
    corpus shuffled by Python's ``random`` seeded with the run's seed, its first ``n`` texts kept, and,
    upsampled, that list repeated ``int(1 / p)`` times (``p = n / len(texts)``), so it stays at most the
    corpus's size. (Their ``int(p * len)`` keeps 99 texts for ``p = 100 / 89,192``; here exactly n.)"""
    order = list(texts)
    random.Random(seed).shuffle(order)
    chosen = order[:n]
    return chosen * int(1.0 / (n / len(texts))) if upsample else chosen
