"""The yardsticks of the comparison and the claims, against known truth.

Expected values come from outside the code: Student-t tables and scipy, Holm's procedure by hand,
and simulations whose truth is known by construction (coverage of nominal 95% intervals).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from consert.evaluate.bootstrap import bootstrap_sets, bootstrap_spearman, interval, resample_weights
from consert.paper.yardstick import (
    bootstrap_p_value,
    holm,
    prediction_half_width,
    prediction_interval,
    prediction_p_value,
    trained_yardstick,
    untrained_yardstick,
)


def test_the_prediction_interval_by_hand_and_against_scipy():
    # three seeds 72.0, 72.6, 73.2: mean 72.6, s = 0.6; t(2, 0.975) = 4.3027 (a t table)
    low, high = prediction_interval([72.0, 72.6, 73.2])
    assert high - 72.6 == pytest.approx(4.3027 * 0.6 * math.sqrt(1 + 1 / 3), abs=1e-3)  # 2.981
    assert 72.6 - low == pytest.approx(high - 72.6)
    # scipy's t interval around the mean, scaled for one new run (not the mean's s / sqrt(n))
    for values in ([1.0, 2.0], [70.1, 70.9, 71.4, 69.8], list(np.linspace(60, 61, 9))):
        array = np.asarray(values)
        scale = array.std(ddof=1) * math.sqrt(1 + 1 / len(array))
        expected = stats.t.interval(0.95, len(array) - 1, loc=array.mean(), scale=scale)
        assert prediction_interval(values) == pytest.approx(expected, abs=1e-9)
    # a published mean of 8 runs (SG-OPT) is less spread than one run: sqrt(1/8 + 1/n)
    assert prediction_half_width(0.5, 4, published_runs=8) == pytest.approx(
        stats.t.ppf(0.975, 3) * 0.5 * math.sqrt(1 / 8 + 1 / 4)
    )
    with pytest.raises(ValueError, match="at least 2 seeds"):
        prediction_half_width(0.5, 1)


def test_the_p_value_of_a_published_value_is_the_t_tests():
    # on the interval's edge p = 0.05 exactly; inside larger, outside smaller
    half = prediction_half_width(0.6, 3)
    assert prediction_p_value(half, 0.6, 3) == pytest.approx(0.05)
    assert prediction_p_value(-half / 2, 0.6, 3) > 0.05 > prediction_p_value(half * 1.5, 0.6, 3)


@pytest.mark.parametrize(("n_seeds", "published_runs"), [(2, 1), (3, 1), (5, 1), (4, 8)])
def test_prediction_intervals_cover_95_percent_of_new_runs(n_seeds, published_runs):
    """Seeds and the published run(s) drawn from one normal: the published mean lies inside 93-97%."""
    rng = np.random.default_rng(1)
    sims = 20_000
    seeds = rng.normal(70.0, 0.8, size=(sims, n_seeds))
    published = rng.normal(70.0, 0.8, size=(sims, published_runs)).mean(axis=1)
    half = stats.t.ppf(0.975, n_seeds - 1) * seeds.std(axis=1, ddof=1)
    half *= math.sqrt(1 / published_runs + 1 / n_seeds)
    inside = np.abs(published - seeds.mean(axis=1)) <= half
    assert inside.mean() == pytest.approx(0.95, abs=0.02)
    # the same decisions through the module, for a slice of the simulations
    for i in range(200):
        low, high = prediction_interval(seeds[i], published_runs=published_runs)
        assert (low <= published[i] <= high) == inside[i]
    # the interval of the mean (no 1/m term) covers too few: it fails this very check
    narrow = stats.t.ppf(0.975, n_seeds - 1) * seeds.std(axis=1, ddof=1) / math.sqrt(n_seeds)
    assert (np.abs(published - seeds.mean(axis=1)) <= narrow).mean() < 0.93


def test_bootstrap_intervals_of_spearman_cover_95_percent_of_the_truth():
    """Bivariate normal samples of 300 pairs (Pearson 0.7): population Spearman = (6 / pi) asin(r / 2)."""
    rng = np.random.default_rng(7)
    truth = 600 / np.pi * np.arcsin(0.7 / 2)
    cover, sims = 0, 2000
    for i in range(sims):
        x = rng.multivariate_normal([0, 0], [[1, 0.7], [0.7, 1]], size=300)
        low, high = interval(bootstrap_spearman(x[:, 0], x[:, 1], resample_weights([300], 500, seed=i)))
        cover += low <= truth <= high
    assert 0.93 <= cover / sims <= 0.97


def test_each_set_is_resampled_by_its_own_seed_and_pairs_stay_paired():
    rng = np.random.default_rng(0)
    gold = rng.normal(size=200)
    model_a = {
        "STS13": {"all": (gold + rng.normal(size=200), gold)},
        "STS16": {"all": (gold + rng.normal(size=200), gold)},
    }
    first = bootstrap_sets(model_a, resamples=100)
    # two sets of the same size get different resamples (one seed for both gave identical ones)
    sts16 = bootstrap_sets({"STS13": model_a["STS16"]}, resamples=100)["STS13"]["all"]
    assert not np.allclose(first["STS16"]["all"], sts16)
    # the same set scored again (another model on the same pairs) gets the same resamples: paired
    again = bootstrap_sets({"STS16": model_a["STS16"]}, resamples=100)
    np.testing.assert_array_equal(again["STS16"]["all"], first["STS16"]["all"])


def test_holm_by_hand():
    # sorted p: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 -> max(0.06, 0.04) = 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    adjusted = holm([np.nan, 0.01, 0.5])  # NaN is not counted: m = 2
    assert np.isnan(adjusted[0]) and adjusted[1:].tolist() == pytest.approx([0.02, 0.5])
    assert holm([0.6, 0.7]).tolist() == [1.0, 1.0]  # capped at 1 and monotone


def test_a_bootstrap_p_value_is_never_zero():
    assert bootstrap_p_value(np.ones(999)) == pytest.approx(1 / 1000)  # (0 + 1) / (999 + 1)
    assert bootstrap_p_value(np.array([1.0, -1.0, 0.0, 2.0])) == pytest.approx(3 / 5)  # ties count against
    assert math.isnan(bootstrap_p_value(np.array([np.nan])))


def test_yardsticks_by_kind_of_row():
    untrained = untrained_yardstick()
    assert untrained.tolerance == pytest.approx(0.035) and untrained.tolerance <= 0.1
    assert untrained.decision == "fixed" and math.isnan(untrained.p_value(1.0))
    one_seed = trained_yardstick(math.nan, 1, declared=1.0, declared_as="comparison.table2")
    assert (one_seed.tolerance, one_seed.decision) == (1.0, "fixed") and "declared" in one_seed.source
    seeds = trained_yardstick(0.6, 3, declared=1.0, declared_as="comparison.table2")
    assert seeds.decision == "holm" and seeds.tolerance == pytest.approx(2.981 + 0.005, abs=1e-3)  # + rounding
    assert seeds.p_value(seeds.tolerance) == pytest.approx(0.05)  # on the edge, rounding given first
    assert seeds.p_value(0.004) == 1.0  # within the published value's rounding: no evidence at all
    # seeds that all agree predict no spread: the declared default judges them, not a zero-width interval
    agreeing = trained_yardstick(0.0, 3, declared=1.0, declared_as="comparison.table2")
    assert (agreeing.decision, agreeing.tolerance) == ("fixed", 1.0)
