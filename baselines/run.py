"""Build any baseline by name and evaluate it on the seven STS sets with provenance."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from consert.configs import Settings
from consert.data.nli import load_nli
from consert.data.senteval import STS_YEAR_SUBSETS, SentEvalData
from consert.encode.cache import VectorCache
from consert.encode.encoder import SentenceEncoder
from consert.evaluate.protocol import evaluate_embedder, evaluate_task_vectors
from consert.provenance import provenance

from . import BASELINE_SPECS, baseline_spec
from .base import BaselineOptions, CachedPooledVectors, SentenceEmbedder

#: Key of a corpus shared by every task.
EVERY_TASK = "*"


def fit_corpora(
    name: str, data: SentEvalData, fit_on: str | None = None, nli_files: Sequence[str] = ()
) -> dict[str, list[str]]:
    """``{dataset: texts}`` a baseline is fitted on per task, ``{EVERY_TASK: texts}`` for one fit,
    ``{}`` for methods without parameters (and names outside :data:`BASELINE_SPECS`). ``fit_on`` is one of
    the baseline's :attr:`~baselines.BaselineSpec.fit_on` (its first when None). ``nli`` fits on both
    sentences of every pair of the SNLI/MNLI jsonl ``nli_files`` (BERT-whitening's NLI variant), or, without
    them, of SICK-E's training pairs (the offline stand-in)."""
    spec = BASELINE_SPECS.get(name)
    if spec is None or not spec.fit_on:
        return {}
    fit_on = spec.fit_on[0] if fit_on is None else fit_on
    if fit_on not in spec.fit_on:
        raise ValueError(f"{name}: fit_on must be one of {spec.fit_on}, got {fit_on!r}")
    if fit_on == "sts":
        return {EVERY_TASK: data.unlabeled_texts()}
    if fit_on == "nli":
        pairs = load_nli("snli+mnli", files=list(nli_files)) if nli_files else load_nli("sick-e", data)
        return {EVERY_TASK: [s for p in pairs for s in (p.premise, p.hypothesis)]}
    passes = {task: spec.year_passes if task in STS_YEAR_SUBSETS else 1 for task in data.sets}
    return {task: sts.scored_texts() * passes[task] for task, sts in data.sets.items()}


def build_baseline(
    name: str,
    encoder: SentenceEncoder | None = None,
    pooling: str = "mean:-2,-1",
    progress: bool = True,
    cache: VectorCache | None = None,
    settings: Settings | None = None,
) -> SentenceEmbedder:
    """A baseline by name, as its :data:`BASELINE_SPECS` record says: those that need an encoder share
    ``encoder``'s cached pooled vectors, taken from ``cache`` (a corpus encoded once by ``consert encode``)
    when given. ``settings`` are the record's own (an instance of its
    :meth:`~baselines.BaselineSpec.settings_class`; its defaults when None); a baseline without a settings class
    given some, or given another class's, is a one-line :class:`ValueError`."""
    spec = baseline_spec(name)
    own = spec.settings_class()
    if settings is not None and (own is None or not isinstance(settings, own)):
        expected = f"{own.__name__} settings" if own else "no settings"
        raise ValueError(f"baseline {name!r} takes {expected}, got {type(settings).__name__}")
    vectors = None
    if spec.needs_encoder:
        if encoder is None:
            raise ValueError(f"baseline {name!r} needs an encoder")
        vectors = CachedPooledVectors(encoder, pooling, progress=progress)
        if cache is not None:
            vectors.preload(cache)
    options = BaselineOptions(settings=settings or (own() if own else None), progress=progress)
    return spec.resolve().build(vectors, options)


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
    run = f"{embedder.name} of {embedder.describe().get('model', '')}".removesuffix(" of ")  # what a fault names
    if EVERY_TASK in corpora or not corpora:
        if corpora:
            embedder.fit(corpora[EVERY_TASK])
        frame = evaluate_embedder(data, embedder.encode, run=run)
        frame["fit_texts"] = len(corpora.get(EVERY_TASK, ()))
    else:
        vectors = {}
        for task, sts in data.sets.items():
            embedder.fit(corpora[task])
            sentences = sts.eval_sentences()
            vectors[task] = dict(zip(sentences, embedder.encode(sentences), strict=True))
        frame = evaluate_task_vectors(data, vectors, run=run)
        counts = {task: len(texts) for task, texts in corpora.items()}
        frame["fit_texts"] = frame.dataset.map(counts).fillna(sum(counts.values())).astype(int)
    described = embedder.describe()
    columns = provenance(
        model=str(described.pop("model", "")),
        base_model=str(described.pop("base_model", "")) or None,
        identity=described.pop("identity", None),
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
