"""Bootstrap confidence intervals of Spearman correlations, exact and vectorised.

The test pairs of a set are a sample; resampling them with replacement gives the spread of its
Spearman. A resample is a vector of multiplicities ``w`` over the original pairs (stratified: each
subset of an STS year is resampled within itself, so SentEval's weighted mean keeps its weights).
Spearman of a resample is Pearson of its ranks, where ties (original ties and the copies a resample
makes) share their average rank. With the values sorted once, the rank of every value in every
resample follows from cumulative sums of the multiplicities: no sort per resample. Twice an average
rank is an integer, so the ranks, their products and Pearson's sums are computed in integers, exactly;
only the final ratio is a float. So B resamples cost a few B x n integer array operations per set, and
the result equals ``scipy.stats.spearmanr`` on the explicitly resampled pairs (a test checks this
against a slow loop).

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


def resample_counts(sizes: Sequence[int], resamples: int = DEFAULT_RESAMPLES, seed: Seed = 0) -> np.ndarray:
    """B x n multiplicities (resample b counts pair i ``counts[b, i]`` times), int32: each block of
    ``sizes`` (a subset) resampled with replacement within itself. Resamples are rows, so that a
    resample's pairs are contiguous for its cumulative sums."""
    rng = np.random.default_rng(seed)
    blocks = []
    for size in sizes:
        draws = rng.integers(0, size, size=(resamples, size), dtype=np.int64)
        draws += np.arange(0, resamples * size, size)[:, None]  # resample b's draw of pair i counts into b * n + i
        blocks.append(np.bincount(draws.ravel(), minlength=size * resamples).reshape(resamples, size))
    return np.concatenate(blocks, axis=1).astype(np.int32)


def _doubled_ranks(ordered: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """B x n twice the average ranks of sorted ``ordered`` (n) in each resample, ``counts`` (B x n) in the
    same sorted order; integers of ``counts``' type.

    A run of equal values is one group: its copies in a resample take the ranks after the weight
    below it, so twice their average rank is ``2 * below + weight + 1``; summed cumulatively along
    the sorted values, no sort per resample.
    """
    cumulative = np.cumsum(counts, axis=1, dtype=counts.dtype)  # weight up to and including each value
    distinct = ordered[1:] != ordered[:-1]
    if distinct.all():  # no ties: every value is its own group, 2 * (cumulative - w) + w + 1
        cumulative *= 2
        cumulative -= counts
        cumulative += 1
        return cumulative
    upto = cumulative[:, np.flatnonzero(np.r_[distinct, True])]  # weight up to each group's end
    group = upto + 1  # (upto - below) + 2 * below + 1 = upto + below + 1
    group[:, 1:] += upto[:, :-1]
    return np.take(group, np.cumsum(np.r_[False, distinct]), axis=1)


def bootstrap_spearman(predicted: np.ndarray, gold: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Spearman x 100 of each resample (B) of the pairs (``predicted``, ``gold``), ``counts`` B x n.

    Every resample has n pairs, so its mean doubled rank is exactly n + 1: the doubled ranks are centred
    on that, and Pearson needs three weighted sums of products per resample, in 64-bit integers. Both
    rankings are taken in the predicted values' sorted order (the gold ranks moved there by one
    gather), so no rank is scattered back to the pairs' order.
    """
    n = counts.shape[1]
    # |weight x centred doubled rank| < max weight x (2n + 1), a doubled rank lying in [1, 2n + 1): 32 bits hold
    # it for any STS set; a larger bound widens to 64
    wide = np.int32 if int(counts.max(initial=0)) * (2 * n + 1) < 2**31 else np.int64
    counts = counts.astype(wide, copy=False)
    predicted, gold = np.asarray(predicted), np.asarray(gold)
    by_predicted = np.argsort(predicted, kind="stable")
    by_gold = np.argsort(gold, kind="stable")
    counts_p = np.take(counts, by_predicted, axis=1)
    rank_p = _doubled_ranks(predicted[by_predicted], counts_p)
    rank_p -= n + 1
    rank_g = _doubled_ranks(gold[by_gold], np.take(counts, by_gold, axis=1))
    rank_g -= n + 1
    gold_position = np.empty(n, dtype=np.intp)
    gold_position[by_gold] = np.arange(n)
    rank_g = np.take(rank_g, gold_position[by_predicted], axis=1)  # gold ranks in predicted-sorted order
    weighted_p = counts_p * rank_p
    cross = np.einsum("ij,ij->i", weighted_p, rank_g, dtype=np.int64)
    var_p = np.einsum("ij,ij->i", weighted_p, rank_p, dtype=np.int64)
    var_g = np.einsum("ij,ij->i", counts_p * rank_g, rank_g, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * cross / np.sqrt(var_p.astype(np.float64) * var_g)


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
    counts = resample_counts(sizes, resamples, seed)
    predicted = np.concatenate([p for p, _ in groups.values()])
    gold = np.concatenate([g for _, g in groups.values()])
    merged = bootstrap_spearman(predicted, gold, counts)
    if len(groups) == 1:
        return {"all": merged, "mean": merged, "wmean": merged}
    bounds = np.cumsum([0, *sizes])
    per_subset = np.stack(
        [
            bootstrap_spearman(p, g, counts[:, low:high])
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
