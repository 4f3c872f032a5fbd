"""Representation diagnostics (consert.evaluate.diagnostics) against hand computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from consert.evaluate.diagnostics import alignment, anisotropy, cosine_by_gold, diagnostics, uniformity

VECTORS = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [-1.0, 0.5]])


def _unit(v):
    return np.asarray(v, dtype=float) / np.linalg.norm(v)


def test_anisotropy_is_the_mean_cosine_of_distinct_pairs_by_hand():
    cosines = [_unit(a) @ _unit(b) for a, b in itertools.permutations(VECTORS, 2)]
    assert anisotropy(VECTORS) == pytest.approx(np.mean(cosines), abs=1e-12)
    # by hand for the first two rows alone: orthogonal, so 0; two copies of one direction: 1
    assert anisotropy(VECTORS[:2]) == pytest.approx(0.0, abs=1e-12)
    assert anisotropy(np.array([[1.0, 1.0], [2.0, 2.0]])) == pytest.approx(1.0)


def test_uniformity_is_wang_and_isolas_log_mean_gaussian_potential_by_hand():
    terms = [math.exp(-2 * np.sum((_unit(a) - _unit(b)) ** 2)) for a, b in itertools.permutations(VECTORS, 2)]
    assert uniformity(VECTORS) == pytest.approx(math.log(np.mean(terms)), abs=1e-6)
    # two antipodal points: ||x - y||^2 = 4, so log exp(-8) = -8
    assert uniformity(np.array([[1.0, 0.0], [-5.0, 0.0]])) == pytest.approx(-8.0, abs=1e-6)


def test_uniformity_holds_its_float32_kernel_to_t_20_and_refuses_more():
    # antipodal points at t = 20: log exp(-80) = -80, a term float32 still holds (about 1.8e-35)
    antipodal = np.array([[1.0, 0.0], [-5.0, 0.0]])
    assert uniformity(antipodal, t=20.0) == pytest.approx(-80.0, abs=1e-4)
    with pytest.raises(ValueError, match="outside"):
        uniformity(antipodal, t=25.0)


def test_uniformity_blocks_give_the_same_value_as_one_pass(monkeypatch):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(50, 8))
    whole = uniformity(vectors)
    monkeypatch.setattr("consert.evaluate.diagnostics.BLOCK", 7)
    assert uniformity(vectors) == pytest.approx(whole, abs=1e-6)


def test_alignment_is_the_mean_squared_distance_of_positive_pairs():
    left = np.array([[1.0, 0.0], [0.0, 3.0]])
    right = np.array([[0.0, 1.0], [0.0, 1.0]])
    # pair 1: unit vectors at 90 degrees, squared distance 2; pair 2: identical direction, 0
    assert alignment(left, right) == pytest.approx(1.0)
    assert math.isnan(alignment(np.empty((0, 2)), np.empty((0, 2))))


def test_cosine_by_gold_bins_close_only_the_last_bin():
    cosine = np.array([0.1, 0.2, 0.5, 0.9, 0.8])
    gold = np.array([0.0, 0.9, 1.0, 5.0, 4.0])
    bins = cosine_by_gold(cosine, gold)
    assert bins["cosine_gold_0_1_mean"] == pytest.approx(0.15)
    assert bins["cosine_gold_1_2_mean"] == pytest.approx(0.5) and math.isnan(bins["cosine_gold_1_2_sd"])
    assert bins["cosine_gold_4_5_mean"] == pytest.approx(0.85)  # 4.0 and 5.0 both in [4, 5]
    assert bins["cosine_gold_4_5_sd"] == pytest.approx(np.std([0.9, 0.8], ddof=1))
    assert math.isnan(bins["cosine_gold_2_3_mean"])


def test_diagnostics_of_a_dataset_uses_its_pairs_and_each_sentence_once():
    vectors = {"a": VECTORS[0], "b": VECTORS[1], "c": VECTORS[2], "d": VECTORS[3]}
    pairs = [("a", "b", 4.5), ("a", "c", 1.0), ("c", "d", 4.0)]
    found = diagnostics(vectors, pairs, np.array([0.0, 0.7, -0.3]))
    assert found["anisotropy"] == pytest.approx(anisotropy(VECTORS))  # a repeated once, not twice
    assert found["n_positive"] == 2
    assert found["alignment"] == pytest.approx(alignment(VECTORS[[0, 2]], VECTORS[[1, 3]]))
    assert found["cosine_gold_4_5_mean"] == pytest.approx(-0.15)
