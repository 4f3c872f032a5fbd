"""Bootstrap confidence intervals of Spearman correlations, exact and vectorised.

The test pairs of a set are a sample; resampling them with replacement gives the spread of its
Spearman. A resample is a vector of multiplicities ``w`` over the original pairs (stratified: each
subset of an STS year is resampled within itself, so SentEval's weighted mean keeps its weights).
Spearman of a resample is Pearson of its ranks, where ties (original ties and the copies a resample
makes) share their average rank. With the values sorted once, the rank of every value in every
resample follows from cumulative sums of the multiplicities: no sort per resample. So B resamples
cost a few B x n array operations per set, and the result equals ``scipy.stats.spearmanr`` on the
explicitly resampled pairs (a test checks this against a slow loop).

Resamples depend only on the seed, the set's name and the subset sizes, so two models scored on the
same pairs see the same resamples: the difference of their replicates is a paired bootstrap of the
difference. Each set's resamples are seeded by its name: two sets of equal size are resampled
independently, as their Avg needs.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Resamples drawn when none is given.
DEFAULT_RESAMPLES = 1000
#: Two-sided interval level.
DEFAULT_LEVEL = 0.95
#: Seed of the resamples: fixed, so that every model scored on the same pairs gets the same ones.
BOOTSTRAP_SEED = 20210801


Seed = int | np.random.SeedSequence


def set_seed(seed: int, name: str) -> np.random.SeedSequence:
    """The resampling seed of one set: the run's seed and a stable hash of the set's name (CRC-32)."""
    return np.random.SeedSequence([seed, zlib.crc32(name.encode("utf-8"))])


def resample_weights(sizes: Sequence[int], resamples: int = DEFAULT_RESAMPLES, seed: Seed = 0) -> np.ndarray:
    """n x B multiplicities (pair i in resample b): each block of ``sizes`` (a subset) resampled with
    replacement within itself. Pairs are rows, so that gathering pairs in sorted order copies rows."""
    rng = np.random.default_rng(seed)
    blocks = []
    for size in sizes:
        draws = rng.integers(0, size, size=(resamples, size), dtype=np.int64)
        draws *= resamples
        draws += np.arange(resamples)[:, None]  # resample b's draw of pair i counts into i * B + b
        blocks.append(np.bincount(draws.ravel(), minlength=size * resamples).reshape(size, resamples))
    return np.concatenate(blocks, axis=0).astype(np.float64)


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """n x B average ranks of ``values`` (n) in each resample given by ``weights`` (n x B).

    Values are sorted once and the multiplicities summed cumulatively in that order: a run of equal
    values is one group, whose rank in a resample is the weight below it plus (its weight + 1) / 2,
    the average rank of its copies. No sort per resample.
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    sorted_weights = weights[order]
    cumulative = np.cumsum(sorted_weights, axis=0)
    distinct = ordered[1:] != ordered[:-1]
    if distinct.all():  # no ties: every value is its own group
        sorted_weights -= 1.0
        sorted_weights /= 2.0
        cumulative -= sorted_weights
        sorted_rank = cumulative
    else:
        upto = cumulative[np.flatnonzero(np.r_[distinct, True])]  # weight up to each group's end
        below = np.vstack([np.zeros((1, weights.shape[1])), upto[:-1]])
        group_rank = below + (upto - below + 1.0) / 2.0
        sorted_rank = group_rank[np.cumsum(np.r_[False, distinct])]
    rank = np.empty_like(sorted_rank)
    rank[order] = sorted_rank
    return rank


def bootstrap_spearman(predicted: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman x 100 of each resample (B) of the pairs (``predicted``, ``gold``), weights n x B.

    Every resample has n pairs, so its mean rank is exactly (n + 1) / 2: the ranks are centred on
    that, and Pearson needs three weighted sums of products per resample.
    """
    centre = (weights.shape[0] + 1) / 2.0
    rank_p = _weighted_ranks(np.asarray(predicted, dtype=np.float64), weights)
    rank_p -= centre
    rank_g = _weighted_ranks(np.asarray(gold, dtype=np.float64), weights)
    rank_g -= centre
    weighted_p = weights * rank_p
    cross = np.einsum("ij,ij->j", weighted_p, rank_g)
    var_p = np.einsum("ij,ij->j", weighted_p, rank_p)
    rank_g *= np.sqrt(weights)
    var_g = np.einsum("ij,ij->j", rank_g, rank_g)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * cross / np.sqrt(var_p * var_g)


def interval(replicates: np.ndarray, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN replicates, from degenerate resamples, dropped)."""
    finite = replicates[np.isfinite(replicates)]
    if not len(finite):
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def grouped_replicates(
    groups: dict[str, tuple[np.ndarray, np.ndarray]], resamples: int = DEFAULT_RESAMPLES, seed: Seed = 0
) -> dict[str, np.ndarray]:
    """Replicates of SentEval's aggregates over ``{subset: (predicted, gold)}``: ``all`` (merged),
    ``mean`` and ``wmean`` (over per-subset Spearman), each a B-vector, with stratified resamples."""
    sizes = [len(gold) for _, gold in groups.values()]
    weights = resample_weights(sizes, resamples, seed)
    predicted = np.concatenate([p for p, _ in groups.values()])
    gold = np.concatenate([g for _, g in groups.values()])
    merged = bootstrap_spearman(predicted, gold, weights)
    if len(groups) == 1:
        return {"all": merged, "mean": merged, "wmean": merged}
    bounds = np.cumsum([0, *sizes])
    per_subset = np.stack(
        [
            bootstrap_spearman(p, g, weights[low:high])
            for (p, g), low, high in zip(groups.values(), bounds[:-1], bounds[1:], strict=True)
        ],
        axis=1,
    )
    size = np.asarray(sizes, dtype=np.float64)
    return {"all": merged, "mean": per_subset.mean(axis=1), "wmean": per_subset @ size / size.sum()}


def bootstrap_sets(
    sets: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]], resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`grouped_replicates` of every set (``{set: {subset: (predicted, gold)}}``), the sets spread
    over as many threads as the job may use (``OMP_NUM_THREADS``, else every core; NumPy releases the
    GIL in these array operations). Each set is seeded by ``seed`` and its name (:func:`set_seed`), so the
    result does not depend on the order, and two sets of equal size get different resamples."""
    workers = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    largest_first = sorted(sets, key=lambda name: -sum(len(gold) for _, gold in sets[name].values()))
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(sets)))) as pool:
        futures = {
            name: pool.submit(grouped_replicates, sets[name], resamples, set_seed(seed, name)) for name in largest_first
        }
        return {name: futures[name].result() for name in sets}


class Replicates(dict):
    """``{dataset: {aggregate: B replicates}}`` kept in a frame's ``attrs``; compared by identity,
    because pandas compares ``attrs`` when it concatenates frames (arrays have no truth value)."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__
