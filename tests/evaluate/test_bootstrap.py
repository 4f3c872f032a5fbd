"""Bootstrap intervals: the vectorised replicates equal a slow, obvious loop; pairing is exact."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from consert.evaluate.bootstrap import bootstrap_spearman, grouped_replicates, interval, resample_counts


def _slow_replicates(groups, counts):
    """Resample each pair explicitly (np.repeat by multiplicity) and call scipy's Spearman."""
    predicted = np.concatenate([p for p, _ in groups.values()])
    gold = np.concatenate([g for _, g in groups.values()])
    out = []
    for w in counts:  # one row per resample
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
    slow = _slow_replicates(groups, resample_counts([40, 25], 200, seed=3))
    np.testing.assert_allclose(fast["all"], slow, atol=1e-9)
    assert interval(fast["all"]) == pytest.approx(interval(slow), abs=1e-9)
    # per-subset replicates give SentEval's mean / wmean of each resample
    counts = resample_counts([40, 25], 200, seed=3)
    only_a = _slow_replicates({"a": groups["a"]}, counts[:, :40])
    only_b = _slow_replicates({"b": groups["b"]}, counts[:, 40:])
    np.testing.assert_allclose(fast["mean"], (only_a + only_b) / 2, atol=1e-9)
    np.testing.assert_allclose(fast["wmean"], (40 * only_a + 25 * only_b) / 65, atol=1e-9)


def test_untied_values_take_the_same_path_to_the_same_answer():
    rng = np.random.default_rng(8)
    groups = {"x": (rng.normal(size=70), rng.normal(size=70))}  # no ties in either vector
    fast = grouped_replicates(groups, resamples=150, seed=4)["all"]
    np.testing.assert_allclose(fast, _slow_replicates(groups, resample_counts([70], 150, seed=4)), atol=1e-9)


def test_resamples_keep_each_subsets_size_and_depend_only_on_the_seed():
    counts = resample_counts([5, 3], resamples=50, seed=11)
    assert counts.shape == (50, 8)
    assert (counts[:, :5].sum(1) == 5).all() and (counts[:, 5:].sum(1) == 3).all()
    np.testing.assert_array_equal(counts, resample_counts([5, 3], resamples=50, seed=11))
    # each row is one resample's multinomial draw: over many resamples a pair is drawn once on average
    many = resample_counts([40], resamples=4000, seed=2)
    assert many.mean() == pytest.approx(1.0, abs=0.01) and many.var() == pytest.approx(1 - 1 / 40, abs=0.05)


def test_a_resample_too_heavy_for_32_bit_products_is_still_exact():
    """Two pairs of 100,000, each drawn 50,000 times: a weight times a centred doubled rank is 2.5e9,
    beyond 32 bits; the products widen and the Spearman of two concordant pairs is 100 (scipy agrees)."""
    n = 100_000
    rng = np.random.default_rng(5)
    predicted, gold = rng.permutation(n).astype(float), rng.permutation(n).astype(float)
    first, second = np.argmin(predicted), np.argmax(predicted)
    gold[first], gold[second] = -1.0, n + 1.0  # concordant on the two drawn pairs
    counts = np.zeros((2, n), dtype=np.int32)
    counts[:, [first, second]] = n // 2
    counts[1, [first, second]] = [n // 2 + 1, n // 2 - 1]  # and a resample where they are not equally weighted
    fast = bootstrap_spearman(predicted, gold, counts)
    np.testing.assert_allclose(fast, _slow_replicates({"x": (predicted, gold)}, counts), atol=1e-9)
    assert fast[0] == pytest.approx(100.0)


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
