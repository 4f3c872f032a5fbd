"""The corpus vector cache: one encoding pass serves every pooling, whitening and flow fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from baselines.flow_settings import FlowSettings
from baselines.run import build_baseline, evaluate_baseline, fit_corpora
from consert.cli import main
from consert.data.senteval import load_senteval
from consert.encode.cache import VectorCache, cache_key
from consert.encode.models import STAND_IN_MODEL

#: A small flow fitted on the cached vectors (the encoder's dropout off: nothing is encoded again).
SMALL_FLOW = FlowSettings(batch_size=16, levels=2, encoder_dropout=False)


def test_cache_round_trip_and_key_check(tiny_tree, tmp_path, encoder):
    data = load_senteval(tiny_tree)
    cache = VectorCache.build(encoder, data.unlabeled_texts(), ["mean", "cls"], data.fingerprint, progress=False)
    path = cache.save(tmp_path / "cache.npz")
    loaded = VectorCache.load(path, cache_key(encoder, data.fingerprint))
    sentences = data.unlabeled_texts()[:5]
    # other batch compositions pad differently: equal up to float rounding
    np.testing.assert_allclose(
        loaded.lookup(sentences, "cls"), encoder.encode(sentences, "cls", progress=False), atol=1e-5
    )
    with pytest.raises(ValueError, match="other \\['data_sha256'\\]"):
        VectorCache.load(path, cache_key(encoder, "another data fingerprint"))
    with pytest.raises(KeyError, match="pooling mean:-2,-1 not in the cache"):
        loaded.lookup(sentences, "mean:-2,-1")


def test_baselines_from_the_cache_never_run_the_model(tiny_tree, encoder):
    data = load_senteval(tiny_tree)
    cache = VectorCache.build(encoder, data.unlabeled_texts(), ["mean:-2,-1"], data.fingerprint, progress=False)
    calls = []
    handle = encoder.model.register_forward_hook(lambda *args: calls.append(1))
    try:
        for name in ("pooling", "whitening", "flow"):
            settings = SMALL_FLOW if name == "flow" else None
            embedder = build_baseline(name, encoder, cache=cache, progress=False, settings=settings)
            frame = evaluate_baseline(embedder, data, fit_corpora(name, data))
            assert frame.spearman.notna().all()
    finally:
        handle.remove()
    assert calls == []


#: fp32 PyTorch: every batch composition gives the same numbers to float rounding
EXACT = ["--dtype", "fp32", "--engine", "torch"]


def test_evaluate_with_vectors_equals_encoding(tiny_tree, tmp_path):
    cache, direct, cached = tmp_path / "c.npz", tmp_path / "direct.csv", tmp_path / "cached.csv"
    assert (
        main(
            [
                "encode",
                STAND_IN_MODEL,
                "--pooling",
                "mean",
                "--pooling",
                "cls",
                "--data",
                str(tiny_tree),
                "--output",
                str(cache),
                *EXACT,
            ]
        )
        == 0
    )
    common = [STAND_IN_MODEL, "--pooling", "mean", "--pooling", "cls", "--data", str(tiny_tree), *EXACT]
    assert main(["evaluate", *common, "--output", str(direct)]) == 0
    assert main(["evaluate", *common, "--vectors", str(cache), "--output", str(cached)]) == 0
    pd.testing.assert_series_equal(pd.read_csv(direct).spearman, pd.read_csv(cached).spearman)


def test_a_partial_cache_leaves_only_the_missing_texts_to_encode(tiny_tree, encoder):
    # a trained run's cache holds its evaluation sentences; BERT-flow on top of it fits on every task's pairs
    from consert.evaluate.protocol import evaluation_sentences

    data = load_senteval(tiny_tree)
    cache = VectorCache.build(encoder, evaluation_sentences(data), ["mean:-2,-1"], data.fingerprint, progress=False)
    fitted = {text for texts in fit_corpora("flow", data).values() for text in texts}
    missing = fitted - set(cache.sentences)
    assert missing and set(cache.sentences) < fitted
    encoded = []
    handle = encoder.model.register_forward_hook(
        lambda module, args, kwargs, output: encoded.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        embedder = build_baseline("flow", encoder, cache=cache, progress=False, settings=SMALL_FLOW)
        evaluate_baseline(embedder, data, fit_corpora("flow", data))
    finally:
        handle.remove()
    # only texts the cache lacks are encoded (not all of them: the flow drops its last partial batch)
    assert 0 < sum(encoded) <= len(missing)
    with pytest.raises(KeyError, match="pooling cls not in the vector cache"):
        build_baseline("pooling", encoder, pooling="cls", cache=cache, progress=False)
