"""The yardstick of a comparison: how far a reproduced number may lie from a published one, and why.

A published number and a reproduced one come from the same test pairs, so test-set resampling is
not what separates them: training seeds, precision and recipe are. The yardstick therefore depends
on what produced the row:

* **Untrained rows** (BERT poolings, GloVe, whitening, the top-k curve of BERT) are deterministic
  functions of the weights and the data. They may differ only by the published value's rounding
  (two decimals: 0.005) and the precision of the arithmetic (0.03: every precision path the harness
  can pick stays within that of PyTorch fp32 on every set-level number, ``tests/test_stand_in_anchor.py``).
* **Trained rows with several seeds**: the seed **prediction interval**. A published number is one
  more run (or the mean of ``m`` runs) from the distribution our ``n`` seeds sample, so it lies within
  ``t(n-1) * s * sqrt(1/m + 1/n)`` of our mean with the stated probability (plus the published value's
  rounding, 0.005); the two-sided p-value of the same t statistic is what a family-wise correction
  (Holm) adjusts.
* **Trained rows with one seed** (or seeds that all agree: no spread to predict from): a declared
  default (the config's ``comparison`` block), with no error rate attached.

The bootstrap over test pairs (:mod:`consert.evaluate.bootstrap`) stays the uncertainty of *paired*
comparisons (two models on the same pairs), which is what the claims use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Half a unit of the published numbers' last digit (two decimals).
PUBLISHED_ROUNDING = 0.005
#: The largest set-level Spearman difference between any precision path and PyTorch fp32 that the
#: tests allow. Measured on the stand-in: ONNX Runtime fp32 0.006; bf16 autocast 0.013 on an AMD EPYC
#: (AVX-512 BF16) and 0.022 on an Intel Xeon with AMX (STS16's mean over its subsets; its merged
#: Spearman moved 0.006): bf16 rounding moves the small subsets' Spearman most.
PRECISION_ALLOWANCE = 0.03
#: Family-wise error rate of one run's decisions, unless a config says otherwise.
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Yardstick:
    """How one cell is judged: ``tolerance`` (in the cell's unit) with its ``source``, and ``decision``:
    ``fixed`` (``|delta| <= tolerance``) or ``holm`` (a seed prediction interval: the published value's
    p-value under the seeds' spread, adjusted with the run's other such cells)."""

    tolerance: float
    source: str
    decision: str
    std: float = math.nan
    n: int = 1
    published_runs: int = 1

    def p_value(self, delta: float) -> float:
        """Two-sided p-value of a reproduced - published difference ``delta`` (NaN for fixed tolerances);
        the published value's rounding is given first: ``|delta|`` shrinks by up to 0.005."""
        if self.decision != "holm":
            return math.nan
        return prediction_p_value(max(0.0, abs(delta) - PUBLISHED_ROUNDING), self.std, self.n, self.published_runs)


def untrained_yardstick() -> Yardstick:
    """Rounding of the published value plus the precision allowance (0.035 points)."""
    return Yardstick(
        round(PUBLISHED_ROUNDING + PRECISION_ALLOWANCE, 6),
        f"untrained: published rounding {PUBLISHED_ROUNDING} + precision allowance {PRECISION_ALLOWANCE}",
        "fixed",
    )


def prediction_half_width(std: float, n: int, level: float = 0.95, published_runs: int = 1) -> float:
    """Half-width of the prediction interval of the mean of ``published_runs`` new runs, from ``n`` seeds
    with sample standard deviation ``std``: ``t_{n-1}((1+level)/2) * std * sqrt(1/m + 1/n)``."""
    if n < 2:
        raise ValueError(f"a prediction interval needs at least 2 seeds, got {n}")
    return float(stats.t.ppf(0.5 + level / 2, n - 1) * std * math.sqrt(1 / published_runs + 1 / n))


def prediction_interval(values: Sequence[float], level: float = 0.95, published_runs: int = 1) -> tuple[float, float]:
    """Where the mean of ``published_runs`` further runs lies with probability ``level``, from seed values."""
    array = np.asarray(values, dtype=float)
    half = prediction_half_width(float(array.std(ddof=1)), len(array), level, published_runs)
    return float(array.mean() - half), float(array.mean() + half)


def prediction_p_value(delta: float, std: float, n: int, published_runs: int = 1) -> float:
    """Two-sided p-value of a published value ``delta`` away from the mean of ``n`` seeds (Student t, n-1 df)."""
    scale = std * math.sqrt(1 / published_runs + 1 / n)
    if scale == 0:
        return 1.0 if delta == 0 else 0.0
    return float(2 * stats.t.sf(abs(delta) / scale, n - 1))


def trained_yardstick(
    std: float, n: int, declared: float, declared_as: str, level: float = 0.95, published_runs: int = 1
) -> Yardstick:
    """The seed prediction interval when ``n >= 2`` seeds ran (and their spread is known), else ``declared``."""
    if n >= 2 and math.isfinite(std) and std > 0:
        half = prediction_half_width(std, n, level, published_runs) + PUBLISHED_ROUNDING
        runs = f"the mean of {published_runs} published runs" if published_runs > 1 else "one published run"
        source = f"seed prediction interval ({n} seeds, s = {std:.3f}, {level:.0%}, {runs}) + rounding 0.005"
        return Yardstick(half, source, "holm", std, n, published_runs)
    why = "one seed" if n < 2 else "no seed spread"
    return Yardstick(declared, f"declared default ({declared_as} = {declared:g}): {why}", "fixed")


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979); NaN entries stay NaN and are not counted.

    Sorted ascending, the i-th smallest of m p-values becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``;
    rejecting where the adjusted value is below alpha keeps the family-wise error at most alpha.
    """
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    if not len(finite):
        return adjusted
    order = finite[np.argsort(p[finite], kind="stable")]
    m = len(order)
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted


def bootstrap_p_value(differences: np.ndarray) -> float:
    """One-sided p-value that a paired difference is not positive: ``(k + 1) / (B + 1)``, k the
    replicates (of B finite ones) at or below zero. Never 0: B resamples cannot show less than 1/(B+1)."""
    finite = np.asarray(differences, dtype=float)
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return math.nan
    return float((np.count_nonzero(finite <= 0) + 1) / (len(finite) + 1))
