"""The Spearman aggregation (all / mean / wmean) on toy cases with known values."""

from __future__ import annotations

import numpy as np
import pytest

from consert.evaluate.protocol import aggregate, cosine_rows, evaluate_vectors, spearman_x100


def test_spearman_perfect_and_reversed():
    assert spearman_x100([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(100.0)
    assert spearman_x100([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-100.0)


def test_all_mean_wmean_differ_as_defined():
    # subset A: 4 pairs perfectly ranked; subset B: 2 pairs reversed. Predictions of B are offset so
    # the merged ranking is not simply the concatenation.
    a = (np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 3.0, 4.0]))
    b = (np.array([0.9, 0.8]), np.array([0.5, 4.5]))
    scores = aggregate({"A": a, "B": b})
    assert scores["subset:A"] == pytest.approx(100.0)
    assert scores["subset:B"] == pytest.approx(-100.0)
    assert scores["mean"] == pytest.approx(0.0)
    assert scores["wmean"] == pytest.approx((4 * 100 - 2 * 100) / 6)
    # merged: preds 0.1 .2 .3 .4 .9 .8 ranks 1 2 3 4 6 5 ; gold 1 2 3 4 .5 4.5 ranks 2 3 4 5 1 6
    d2 = sum((p - g) ** 2 for p, g in zip([1, 2, 3, 4, 6, 5], [2, 3, 4, 5, 1, 6], strict=True))
    assert scores["all"] == pytest.approx((1 - 6 * d2 / (6 * 35)) * 100)


def test_cosine_rows_handles_zero_vectors():
    sims = cosine_rows(np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[1.0, 1.0], [1.0, 0.0]]))
    assert sims == pytest.approx([np.sqrt(0.5), 0.0])


def test_frame_has_dataset_subset_and_avg_rows(tiny_tree):
    from consert.data.senteval import load_senteval

    data = load_senteval(tiny_tree)
    rng = np.random.default_rng(0)
    vectors = {}
    for sts in data.sets.values():
        for pairs in sts.groups.values():
            for pair in pairs:
                vectors.setdefault(pair.sent1, rng.normal(size=4))
                vectors.setdefault(pair.sent2, rng.normal(size=4))
    frame = evaluate_vectors(data, vectors)
    per_set = frame[frame.subset == "all"]
    assert list(per_set.dataset) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Avg"]
    avg = per_set.set_index("dataset").spearman
    assert avg["Avg"] == pytest.approx(avg.drop("Avg").mean())
    assert len(frame[frame.dataset == "STS14"]) == 1 + 6
    assert frame[(frame.dataset == "STS15") & (frame.subset == "all")].n_pairs.item() == 5 * 3
