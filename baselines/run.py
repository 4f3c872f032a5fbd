"""Build any baseline by name and evaluate it on the seven STS sets with provenance."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from consert.cache import VectorCache
from consert.data import SentEvalData
from consert.encode import SentenceEncoder
from consert.evaluate import evaluate_embedder, evaluation_sentences
from consert.provenance import provenance

from .base import CachedPooledVectors, SentenceEmbedder
from .flow import FlowBaseline
from .glove import GloveBaseline
from .pooling import PoolingBaseline
from .whitening import WhiteningBaseline

BASELINES = ("pooling", "whitening", "flow", "glove")
WHITENING_FIT = ("targets", "nli")


def fit_texts(name: str, data: SentEvalData, fit_on: str = "targets") -> list[str]:
    """What a baseline is fitted on: whitening on the target texts (or NLI texts), flow on the
    unlabeled STS corpus; nothing for the others."""
    if name == "flow":
        return data.unlabeled_texts()
    if name == "whitening":
        if fit_on == "targets":
            return evaluation_sentences(data)
        if fit_on == "nli":  # offline: SICK-E's training pairs stand in for SNLI+MNLI
            return [s for p in data.sets["SICK-R"].nli["train"] for s in (p.premise, p.hypothesis)]
        raise ValueError(f"whitening fit_on must be one of {WHITENING_FIT}, got {fit_on!r}")
    return []


def build_baseline(
    name: str,
    encoder: SentenceEncoder | None = None,
    pooling: str = "mean:-2,-1",
    whitening_k: int | None = None,
    fit_on: str = "targets",
    glove_path: str | None = None,
    progress: bool = True,
    cache: VectorCache | None = None,
    **flow_settings,
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
        return WhiteningBaseline(vectors, whitening_k, fit_on)
    return FlowBaseline(vectors, progress=progress, **flow_settings)


def evaluate_baseline(
    embedder: SentenceEmbedder, data: SentEvalData, texts: Sequence[str] = (), seed: int | None = None
) -> pd.DataFrame:
    """Fit on ``texts`` (if any), evaluate on the 7 sets, and attach the provenance columns."""
    if texts:
        embedder.fit(texts)
    frame = evaluate_embedder(data, embedder.encode)
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
        fit_texts=len(texts),
        **described,
    )
    return frame.assign(**columns)
