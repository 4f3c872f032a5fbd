"""The unlabeled texts an unsupervised stage trains on, and the authors' few-shot subsets of them."""

from __future__ import annotations

import random
from pathlib import Path

from consert.data.inputs import ExternalInput, file_input
from consert.data.senteval import STS_YEAR_SUBSETS, SentEvalData, paper_tasks
from consert.train.config import TrainConfig


def corpus_inputs(config: TrainConfig) -> list[ExternalInput]:
    """The corpus file an unsupervised stage reads ([] for the STS texts, read with the sets)."""
    return [] if config.train_texts == "sts" else [file_input(config.train_texts, "train_texts")]


#: Each STS year's subsets in the order the ConSERT authors' loader reads them (data_utils.py, load_sts12 to
#: load_sts16), which differs from SentEval's (:data:`consert.data.senteval.STS_YEAR_SUBSETS`) for STS13 and STS14.
#: Their few-shot subsets are the first n of that corpus after main.py's seeded shuffle.
AUTHORS_SUBSET_ORDER: dict[str, tuple[str, ...]] = {
    **STS_YEAR_SUBSETS,  # STS12, STS15 and STS16 in SentEval's order
    "STS13": ("headlines", "OnWN", "FNWN"),
    "STS14": ("images", "OnWN", "tweet-news", "deft-news", "deft-forum", "headlines"),
}


def authors_corpus(data: SentEvalData) -> list[str]:
    """The unlabeled STS texts in the order the authors' ``load_datasets`` gives them (main.py ``--train_data
    stssick``): the paper's sets in their order, each year's subsets in :data:`AUTHORS_SUBSET_ORDER`, STS-B's and
    SICK's splits train, dev (trial), test. The texts of :meth:`~consert.data.senteval.SentEvalData.unlabeled_texts`,
    in another order."""
    texts = []
    for name in paper_tasks():
        if name in data.sets:
            groups = data.sets[name].group_texts
            texts += [text for group in AUTHORS_SUBSET_ORDER.get(name, tuple(groups)) for text in groups[group]]
    return texts


def training_texts(config: TrainConfig, data: SentEvalData) -> list[str]:
    """The unlabeled texts (STS corpus or a file), subsampled to ``n_texts`` with the run's seed. A few-shot sample
    of the STS corpus is drawn from it in the authors' order (:func:`authors_corpus`), so that a seed gives their
    texts; the whole corpus is reshuffled every epoch, its order is the sets'."""
    if config.train_texts == "sts":
        few_shot = config.n_texts is not None and config.n_texts < len(data.unlabeled_texts())
        texts = authors_corpus(data) if few_shot else data.unlabeled_texts()
    else:
        path = Path(config.train_texts)
        if not path.is_file():
            hint = " (`consert download-data --wiki1m` fetches SimCSE's)" if "wiki1m" in path.name else ""
            raise FileNotFoundError(f"train_texts: {path} not found (expected one text per line){hint}")
        texts = [line.strip() for line in text_lines(path, "train_texts") if line.strip()]
        if not texts:
            raise ValueError(f"train_texts: {path} holds no text (expected one text per line)")
    if config.n_texts is not None and config.n_texts < len(texts):
        texts = few_shot_texts(texts, config.n_texts, config.seed, config.upsample)
    return texts


def text_lines(path: Path, key: str) -> list[str]:
    """The lines of a UTF-8 text file (``\n`` ends a line); a file that is not UTF-8 is one line naming the key, the
    file, the line and the byte."""
    from consert.configs import NotUtf8Error, read_utf8

    try:
        return read_utf8(path).split("\n")
    except NotUtf8Error as err:
        raise ValueError(f"{key}: {path}:{err.line}: not UTF-8 text (byte {err.offset:,}); expected UTF-8") from None


def few_shot_texts(texts: list[str], n: int, seed: int, upsample: bool = True) -> list[str]:
    """The ConSERT authors' few-shot corpus (``main.py --data_proportion p --do_upsampling``): the whole
    corpus shuffled by Python's ``random`` seeded with the run's seed, its first ``n`` texts kept, and,
    upsampled, that list repeated ``int(1 / p)`` times (``p = n / len(texts)``), so it stays at most the
    corpus's size. (Their ``int(p * len)`` keeps 99 texts for ``p = 100 / 89,192``; here exactly n.)"""
    order = list(texts)
    random.Random(seed).shuffle(order)
    chosen = order[:n]
    return chosen * int(1.0 / (n / len(texts))) if upsample else chosen
