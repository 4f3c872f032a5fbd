"""Representation diagnostics of sentence vectors: the collapse the paper is about, measured.

* **anisotropy**: the mean cosine similarity of all pairs of distinct sentences (Ethayarajh, 2019;
  ConSERT's Section 1 calls the collapse of BERT's sentence vectors into a narrow cone by this name):
  near 1 when every sentence looks alike.
* **alignment** and **uniformity** (Wang and Isola, 2020, as SimCSE reports them, Section 6): on
  L2-normalised vectors, alignment is the mean squared distance of positive pairs (gold score of 4 or
  more on the 0-5 scale: smaller is better) and uniformity is ``log mean exp(-2 ||x - y||^2)`` over all
  pairs of distinct sentences (smaller, i.e. more negative, is better).
* **cosine by gold bin**: the mean and standard deviation of the predicted cosine of the test pairs in
  each unit bin of gold score; a collapsed space has every bin's mean near 1.

All are computed from vectors the evaluation already has, never by encoding again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Gold score at or above which a pair counts as positive for alignment (SimCSE: STS-B pairs scored 4+).
POSITIVE_GOLD = 4.0
#: Unit bins of gold score: [0, 1), [1, 2), [2, 3), [3, 4), [4, 5] (SICK-R's scores start at 1).
GOLD_BINS = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5))
#: Rows of the all-pairs computations done at once (memory: BLOCK x n floats).
BLOCK = 2048
#: The columns :func:`diagnostics` returns, in order.
DIAGNOSTIC_COLUMNS = (
    "anisotropy",
    "alignment",
    "uniformity",
    "n_positive",
    *(f"cosine_gold_{lo}_{hi}_{stat}" for lo, hi in GOLD_BINS for stat in ("mean", "sd")),
)


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def anisotropy(vectors: np.ndarray) -> float:
    """Mean cosine similarity over all ordered pairs of distinct rows (n >= 2): from the norm of their
    sum, ``(|sum x|^2 - sum |x|^2) / (n (n - 1))`` on unit rows, without forming the n x n matrix."""
    unit = normalise(vectors)
    n = len(unit)
    total = unit.sum(axis=0)
    return float((total @ total - np.einsum("ij,ij->", unit, unit)) / (n * (n - 1)))


def uniformity(vectors: np.ndarray, t: float = 2.0) -> float:
    """``log mean exp(-t ||x - y||^2)`` over all pairs of distinct unit rows (Wang and Isola's L_uniform).

    On unit rows ``||x - y||^2 = 2 - 2 cos``, so each term is ``exp(-2t (1 - cos))``, between ``exp(-4t)``
    and 1: the kernel is taken in float32 (no overflow; no underflow while ``t <= 20``) and summed in float64,
    block by block, without the n x n matrix.
    """
    if not 0 < t <= 20:
        raise ValueError(f"uniformity: t={t} is outside (0, 20], where float32 holds exp(-4t)")
    unit = normalise(vectors).astype(np.float32)
    n = len(unit)
    total = 0.0
    for start in range(0, n, BLOCK):
        kernel = unit[start : start + BLOCK] @ unit.T  # cosines, then the kernel in place
        np.minimum(kernel, 1.0, out=kernel)  # a squared distance is never negative
        kernel -= 1.0
        kernel *= np.float32(2.0 * t)
        np.exp(kernel, out=kernel)
        rows = np.arange(len(kernel))
        kernel[rows, rows + start] = 0.0  # a sentence with itself is not a pair
        total += kernel.sum(dtype=np.float64)
    return float(np.log(total / (n * (n - 1))))


def alignment(left: np.ndarray, right: np.ndarray, alpha: float = 2.0) -> float:
    """Mean ``||x - y||^alpha`` over positive pairs (rows of ``left`` and ``right``), on unit vectors."""
    if len(left) == 0:
        return float("nan")
    distance = np.linalg.norm(normalise(left) - normalise(right), axis=1)
    return float(np.mean(distance**alpha))


def cosine_by_gold(cosine: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Mean and standard deviation (ddof 1) of ``cosine`` in each bin of :data:`GOLD_BINS`."""
    values = {}
    for lo, hi in GOLD_BINS:
        inside = (gold >= lo) & ((gold < hi) if hi < GOLD_BINS[-1][1] else (gold <= hi))
        part = cosine[inside]
        values[f"cosine_gold_{lo}_{hi}_mean"] = float(part.mean()) if len(part) else float("nan")
        values[f"cosine_gold_{lo}_{hi}_sd"] = float(part.std(ddof=1)) if len(part) > 1 else float("nan")
    return values


def diagnostics(
    vectors: dict[str, np.ndarray], pairs: Sequence[tuple[str, str, float]], cosine: np.ndarray
) -> dict[str, float]:
    """Every diagnostic of one dataset: ``vectors`` maps each sentence to its vector, ``pairs`` are the
    test pairs (sentence, sentence, gold) and ``cosine`` their predicted similarities, in that order."""
    sentences = list(dict.fromkeys(s for a, b, _ in pairs for s in (a, b)))
    matrix = np.stack([vectors[s] for s in sentences])
    gold = np.array([g for _, _, g in pairs], dtype=np.float64)
    positive = [(a, b) for a, b, g in pairs if g >= POSITIVE_GOLD]
    left = np.stack([vectors[a] for a, _ in positive]) if positive else np.empty((0, matrix.shape[1]))
    right = np.stack([vectors[b] for _, b in positive]) if positive else np.empty((0, matrix.shape[1]))
    return {
        "anisotropy": anisotropy(matrix),
        "alignment": alignment(left, right),
        "uniformity": uniformity(matrix),
        "n_positive": len(positive),
        **cosine_by_gold(np.asarray(cosine, dtype=np.float64), gold),
    }
