"""Build any baseline by name and evaluate it on the seven STS sets with provenance."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from consert.data.nli import load_nli
from consert.data.senteval import STS_YEAR_SUBSETS, SentEvalData
from consert.encode.cache import VectorCache
from consert.encode.encoder import SentenceEncoder
from consert.evaluate.protocol import evaluate_embedder, evaluate_task_vectors
from consert.provenance import provenance

from . import BASELINES
from .base import CachedPooledVectors, SentenceEmbedder
from .flow import FlowBaseline
from .flow_settings import FlowSettings
from .glove import GloveBaseline
from .pooling import PoolingBaseline
from .whitening import WhiteningBaseline

#: What a fitted baseline may be fitted on. ``task``: one fit per task on that task's scored pairs
#: (the authors of BERT-flow and BERT-whitening); ``sts``: one fit on the 89,192 unlabeled STS texts;
#: ``nli``: one fit on NLI sentences (BERT-whitening's "NLI" variant).
FIT_CORPORA = {"whitening": ("task", "nli"), "flow": ("task", "sts")}
#: Key of a corpus shared by every task.
EVERY_TASK = "*"
#: BERT-flow's STS12-16 "train+dev+test" is one file (full.txt) given as train, dev and test:
#: every sentence is fitted on three times in its one epoch.
FLOW_YEAR_PASSES = 3


def fit_corpora(
    name: str, data: SentEvalData, fit_on: str = "task", nli_files: Sequence[str] = ()
) -> dict[str, list[str]]:
    """``{dataset: texts}`` a baseline is fitted on per task, ``{EVERY_TASK: texts}`` for one fit,
    ``{}`` for methods without parameters. ``nli`` fits on both sentences of every pair of the SNLI/MNLI
    jsonl ``nli_files`` (BERT-whitening's NLI variant), or, without them, of SICK-E's training pairs (the
    offline stand-in)."""
    if name not in FIT_CORPORA:
        return {}
    if fit_on not in FIT_CORPORA[name]:
        raise ValueError(f"{name}: fit_on must be one of {FIT_CORPORA[name]}, got {fit_on!r}")
    if fit_on == "sts":
        return {EVERY_TASK: data.unlabeled_texts()}
    if fit_on == "nli":
        pairs = load_nli("snli+mnli", files=list(nli_files)) if nli_files else load_nli("sick-e", data)
        return {EVERY_TASK: [s for p in pairs for s in (p.premise, p.hypothesis)]}
    passes = {task: FLOW_YEAR_PASSES if name == "flow" and task in STS_YEAR_SUBSETS else 1 for task in data.sets}
    return {task: sts.scored_texts() * passes[task] for task, sts in data.sets.items()}


def build_baseline(
    name: str,
    encoder: SentenceEncoder | None = None,
    pooling: str = "mean:-2,-1",
    whitening_k: int | None = None,
    glove_path: str | None = None,
    progress: bool = True,
    cache: VectorCache | None = None,
    flow: FlowSettings | None = None,
) -> SentenceEmbedder:
    """A baseline by name; encoder-based ones share ``encoder``'s cached pooled vectors, taken from
    ``cache`` (a corpus encoded once by ``consert encode``) when given."""
    if name == "glove":
        return GloveBaseline(glove_path)
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose from {BASELINES} (SG-OPT trains: `consert sgopt`)")
    if encoder is None:
        raise ValueError(f"baseline {name!r} needs an encoder")
    vectors = CachedPooledVectors(encoder, pooling, progress=progress)
    if cache is not None:
        vectors.preload(cache)
    if name == "pooling":
        return PoolingBaseline(vectors)
    if name == "whitening":
        return WhiteningBaseline(vectors, whitening_k)
    return FlowBaseline(vectors, flow, progress=progress)


def evaluate_baseline(
    embedder: SentenceEmbedder,
    data: SentEvalData,
    corpora: dict[str, list[str]] | None = None,
    seed: int | None = None,
    fit_on: str = "",
) -> pd.DataFrame:
    """Fit on ``corpora`` (see :func:`fit_corpora`; per task or once), evaluate on the 7 sets, and
    attach the provenance columns; ``fit_texts`` says how many texts each row's fit saw."""
    corpora = corpora or {}
    if EVERY_TASK in corpora or not corpora:
        if corpora:
            embedder.fit(corpora[EVERY_TASK])
        frame = evaluate_embedder(data, embedder.encode)
        frame["fit_texts"] = len(corpora.get(EVERY_TASK, ()))
    else:
        vectors = {}
        for task, sts in data.sets.items():
            embedder.fit(corpora[task])
            sentences = sts.eval_sentences()
            vectors[task] = dict(zip(sentences, embedder.encode(sentences), strict=True))
        frame = evaluate_task_vectors(data, vectors)
        counts = {task: len(texts) for task, texts in corpora.items()}
        frame["fit_texts"] = frame.dataset.map(counts).fillna(sum(counts.values())).astype(int)
    described = embedder.describe()
    columns = provenance(
        model=str(described.pop("model", "")),
        base_model=str(described.pop("base_model", "")) or None,
        model_sha256=str(described.pop("model_sha256", "")),
        setting=str(described.pop("setting", "")),
        pooling=str(described.pop("pooling", "")),
        max_length=described.pop("max_length", ""),
        dtype=described.pop("dtype", ""),
        engine=str(described.pop("engine")),
        device=described.pop("device", "cpu"),
        data_dir=data.root,
        data_sha256=data.fingerprint,
        data_verified=data.verified,
        seed=seed,
        fit_on=fit_on or "none",
        **described,
    )
    return frame.assign(**columns)
