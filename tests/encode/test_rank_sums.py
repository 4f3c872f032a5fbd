"""Top-k statistics: hand-made batches with known masked means, and the cache/CLI paths that reuse them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from baselines.topk import topk_collector, topk_curve
from consert.cli import main
from consert.data.senteval import load_senteval
from consert.encode.cache import VectorCache, cache_key
from consert.encode.models import STAND_IN_MODEL
from consert.encode.rank_sums import RankSumCollector


def _batch(rows):
    """Padded input_ids / attention_mask and one hidden layer from ``[(ids, vectors), ...]``."""
    width = max(len(ids) for ids, _ in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    hidden = torch.full((len(rows), width, 2), 99.0)  # padding must never count
    for i, (token_ids, vectors) in enumerate(rows):
        ids[i, : len(token_ids)] = torch.tensor(token_ids)
        mask[i, : len(token_ids)] = 1
        hidden[i, : len(token_ids)] = torch.tensor(vectors, dtype=torch.float)
    return (hidden,), {"input_ids": ids, "attention_mask": mask}


def test_masked_means_by_hand():
    # ranking: id 7 most frequent, then 5, then 9
    collector = RankSumCollector(["x", "y", "z"], ranking=[7, 5, 9], pooling="mean")
    hidden, batch = _batch(
        [
            ([7, 3, 3, 5], [[1, 0], [0, 2], [0, 4], [3, 3]]),  # x
            ([7, 9, 5], [[2, 2], [6, 0], [0, 6]]),  # z: only ranked tokens
            ([7, 4], [[0, 0], [5, 5]]),  # w: not asked for
        ]
    )
    collector(["x", "z", "w"], hidden, batch)
    with pytest.raises(ValueError, match="1 sentences were never encoded, e.g. 'y'"):
        collector.result()
    hidden, batch = _batch([([7, 9, 9], [[4, 0], [1, 1], [3, 3]])])
    collector(["y"], hidden, batch)
    means = dict(collector.result().masked_means([0, 1, 2, 3]))
    np.testing.assert_allclose(means[0], [[1, 9 / 4], [8 / 3, 4 / 3], [8 / 3, 8 / 3]], rtol=1e-6)
    np.testing.assert_allclose(means[1], [[1, 3], [2, 2], [3, 3]], rtol=1e-6)  # without id 7
    np.testing.assert_allclose(means[2], [[0, 3], [2, 2], [6, 0]], rtol=1e-6)  # and without id 5
    np.testing.assert_allclose(means[3], [[0, 3], [0, 0], [0, 0]], rtol=1e-6)  # y and z: nothing left


def test_collector_refuses_cls_pooling_and_repeated_ids():
    with pytest.raises(ValueError, match="not a mean"):
        RankSumCollector(["x"], [1, 2], pooling="cls")
    with pytest.raises(ValueError, match="twice"):
        RankSumCollector(["x"], [1, 1])


def test_topk_curve_from_the_cache_equals_encoding_and_runs_no_model(tiny_tree, tmp_path, encoder):
    data = load_senteval(tiny_tree)
    cache = VectorCache.build(
        encoder, data.unlabeled_texts(), ["mean:-2,-1"], data.fingerprint, False, topk_collector(encoder, data, 4)
    )
    loaded = VectorCache.load(cache.save(tmp_path / "c.npz"), cache_key(encoder, data.fingerprint), rank_sums=True)
    direct = topk_curve(encoder, data, range(5), progress=False)
    calls = []
    handle = encoder.model.register_forward_hook(lambda *args: calls.append(1))
    try:
        cached = topk_curve(encoder, data, range(5), rank_sums=loaded.rank_sums)
    finally:
        handle.remove()
    assert calls == []
    # the cache's batches mix in other corpus texts, so padding differs: equal up to float rounding
    np.testing.assert_allclose(cached.spearman, direct.spearman, atol=1e-3)
    assert list(cached.removed_tokens) == list(direct.removed_tokens)
    with pytest.raises(ValueError, match="cover k <= 4"):
        topk_curve(encoder, data, range(6), rank_sums=loaded.rank_sums)
    with pytest.raises(ValueError, match="no top-k statistics"):
        VectorCache.load(VectorCache.build(encoder, ["a b"], ["mean"], "x", False).save(tmp_path / "n.npz"), None, True)


def test_cli_topk_and_predictions_read_the_cache(tiny_tree, tmp_path):
    cache = tmp_path / "c.npz"
    common = ["--data", str(tiny_tree), "--dtype", "fp32", "--engine", "torch"]  # batch-independent numbers
    assert main(["encode", STAND_IN_MODEL, "--topk-max", "3", "--output", str(cache), *common]) == 0
    for command, extra in (("topk", ["--max-k", "3"]), ("predictions", [])):
        direct, cached = tmp_path / f"{command}-direct.csv", tmp_path / f"{command}-cached.csv"
        assert main([command, STAND_IN_MODEL, *extra, *common, "--output", str(direct)]) == 0
        assert main([command, STAND_IN_MODEL, *extra, *common, "--vectors", str(cache), "--output", str(cached)]) == 0
        column = "spearman" if command == "topk" else "cosine"
        np.testing.assert_allclose(pd.read_csv(cached)[column], pd.read_csv(direct)[column], atol=1e-3)


def test_train_refuses_to_keep_vectors_it_does_not_compute(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--save-vectors", "v.npz", "--topk-max", "50"])
    assert exit_info.value.code == 2
    assert "pass --evaluate FILE.csv too" in capsys.readouterr().err


def test_k_zero_is_plain_mean_pooling_without_any_ranked_token():
    collector = RankSumCollector(["x"], ranking=[], pooling="mean")
    hidden, batch = _batch([([7, 3], [[1, 0], [0, 2]])])
    collector(["x"], hidden, batch)
    np.testing.assert_allclose(dict(collector.result().masked_means([0]))[0], [[0.5, 1.0]])


def test_cache_reads_only_the_poolings_asked_for_and_checks_top_k_sentences(tmp_path, encoder):
    path = VectorCache.build(encoder, ["a b", "c"], ["mean", "cls"], "data", False).save(tmp_path / "c.npz")
    assert sorted(VectorCache.load(path, poolings=["cls"]).vectors) == ["cls"]
    assert VectorCache.load(path, poolings=[]).vectors == {}
    with pytest.raises(ValueError, match="not among those encoded"):
        VectorCache.build(encoder, ["a b"], ["mean"], "data", False, RankSumCollector(["a b", "z"], [1]))


def test_cli_errors_are_one_line(tiny_tree, tmp_path, capsys):
    cache = tmp_path / "c.npz"
    assert main(["encode", STAND_IN_MODEL, "--data", str(tiny_tree), "--output", str(cache)]) == 0
    capsys.readouterr()
    out = str(tmp_path / "p.csv")
    args = ["predictions", STAND_IN_MODEL, "--pooling", "cls", "--vectors", str(cache), "--output", out]
    assert main([*args, "--data", str(tiny_tree)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"consert predictions: error: {cache}: pooling cls not in the cache (has ['mean:-2,-1']) "
        "(--debug shows the traceback)"
    )
    assert main(["topk", STAND_IN_MODEL, "--vectors", str(cache), "--data", str(tiny_tree)]) == 2
    assert "no top-k statistics in this cache" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["topk", STAND_IN_MODEL, "--max-k", "-1"])
    with pytest.raises(SystemExit):
        main(["train", "--evaluate", "e.csv", "--topk-max", "5"])  # statistics with nowhere to keep them
