"""Bootstrap intervals: the vectorised replicates equal a slow, obvious loop; pairing is exact."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from consert.evaluate.bootstrap import grouped_replicates, interval, resample_weights


def _slow_replicates(groups, weights):
    """Resample each pair explicitly (np.repeat by multiplicity) and call scipy's Spearman."""
    predicted = np.concatenate([p for p, _ in groups.values()])
    gold = np.concatenate([g for _, g in groups.values()])
    out = []
    for w in weights.T.astype(int):  # one column per resample
        index = np.repeat(np.arange(len(gold)), w)
        out.append(spearmanr(predicted[index], gold[index]).statistic * 100)
    return np.array(out)


def test_the_vectorised_interval_equals_a_slow_loop():
    rng = np.random.default_rng(7)
    # ties in both vectors (rounded predictions, gold on a 0.2 grid), as in STS data
    groups = {
        "a": (rng.normal(size=40).round(1), rng.integers(0, 25, size=40) / 5.0),
        "b": (rng.normal(size=25).round(1), rng.integers(0, 25, size=25) / 5.0),
    }
    fast = grouped_replicates(groups, resamples=200, seed=3)
    slow = _slow_replicates(groups, resample_weights([40, 25], 200, seed=3))
    np.testing.assert_allclose(fast["all"], slow, atol=1e-9)
    assert interval(fast["all"]) == pytest.approx(interval(slow), abs=1e-9)
    # per-subset replicates give SentEval's mean / wmean of each resample
    weights = resample_weights([40, 25], 200, seed=3)
    only_a = _slow_replicates({"a": groups["a"]}, weights[:40])
    only_b = _slow_replicates({"b": groups["b"]}, weights[40:])
    np.testing.assert_allclose(fast["mean"], (only_a + only_b) / 2, atol=1e-9)
    np.testing.assert_allclose(fast["wmean"], (40 * only_a + 25 * only_b) / 65, atol=1e-9)


def test_untied_values_take_the_same_path_to_the_same_answer():
    rng = np.random.default_rng(8)
    groups = {"x": (rng.normal(size=70), rng.normal(size=70))}  # no ties in either vector
    fast = grouped_replicates(groups, resamples=150, seed=4)["all"]
    np.testing.assert_allclose(fast, _slow_replicates(groups, resample_weights([70], 150, seed=4)), atol=1e-9)


def test_resamples_keep_each_subsets_size_and_depend_only_on_the_seed():
    weights = resample_weights([5, 3], resamples=50, seed=11)
    assert weights.shape == (8, 50)
    assert (weights[:5].sum(0) == 5).all() and (weights[5:].sum(0) == 3).all()
    np.testing.assert_array_equal(weights, resample_weights([5, 3], resamples=50, seed=11))


def test_a_paired_interval_of_a_row_against_itself_is_exactly_zero():
    rng = np.random.default_rng(0)
    groups = {"x": (rng.normal(size=60), rng.uniform(0, 5, size=60))}
    first = grouped_replicates(groups, 300, seed=1)["all"]
    second = grouped_replicates(groups, 300, seed=1)["all"]  # another model with the same scores
    assert interval(first - second) == (0.0, 0.0)
    other = grouped_replicates({"x": (groups["x"][0] + rng.normal(size=60), groups["x"][1])}, 300, seed=1)["all"]
    low, high = interval(first - other)
    assert low < high


def test_evaluation_rows_carry_intervals_around_their_value(tiny_tree):
    from consert.data.senteval import load_senteval
    from consert.evaluate.protocol import evaluate_vectors, evaluation_sentences

    data = load_senteval(tiny_tree)
    rng = np.random.default_rng(0)
    vectors = {s: rng.normal(size=4) for s in evaluation_sentences(data)}
    frame = evaluate_vectors(data, vectors)
    rows = frame[frame.subset == "all"]
    assert rows[["spearman_ci_low", "spearman_ci_high", "spearman_wmean_ci_low"]].notna().all().all()
    assert (rows.spearman_ci_low <= rows.spearman_ci_high).all()
    assert set(frame.attrs["replicates"]) == {*data.sets, "Avg"}
    assert frame[frame.subset != "all"].spearman_ci_low.isna().all()
    none = evaluate_vectors(data, vectors, resamples=0)
    assert none.spearman_ci_low.isna().all()
    pd.testing.assert_series_equal(none.spearman, frame.spearman)
