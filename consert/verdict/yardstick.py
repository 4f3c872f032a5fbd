"""How a reproduced number is judged against a published one: an equivalence test with a declared margin.

"Reproduced" is a claim of equivalence, so it must be shown, never inferred from a failure to reject.
Each compared cell gets the **interval of reproduced - published** and a **declared margin** delta (the
difference that would change a reader's conclusion, ``decision.yaml`` beside the published tables):

* ``reproduced``: the interval lies within ``[-delta, +delta]`` (two one-sided tests, each at 5 %, read as
  the inclusion of the 90 % interval);
* ``not reproduced``: the interval lies entirely outside ``[-delta, +delta]``;
* ``inconclusive``: the interval straddles a margin: the run cannot tell.

What the interval holds depends on what produced the row:

* **Untrained rows** (BERT poolings, GloVe, whitening, BERT's top-k curve) are deterministic functions of
  the weights and the data: the interval is the point ``delta`` and the margin is fixed at the published
  value's rounding (0.005) plus the precision of the arithmetic (0.03: every CPU precision path the harness
  can pick stays within that of PyTorch fp32 on every set-level number, a test; on an H100, bf16 and fp16
  stayed within 0.009 of sentence-transformers' fp32 in ``consert bench --device cuda``).
* **Trained rows**: ``delta +- (q * sigma * sqrt(1/n + 1/m) + 0.005)``, ``n`` our seeds, ``m`` the runs the
  published value averages (8 for SG-OPT, else 1), 0.005 the published rounding. ``sigma``, the seed
  standard deviation of one run, is **pooled** over the compared rows of the same kind (their degrees of
  freedom add: 3 seeds on 12 rows give 24), ``q`` is Student's t quantile at those degrees of freedom;
  with no seed spread to pool, a **declared** sigma per kind (with its source) and the normal quantile.

Across the trained rows, a **shared shift** (a bug that moves every row the same way) is tested on the
mean delta of the primary cells: its t-interval over rows against its own margin (a sign test of the
deltas is reported beside it; the verdict is the interval's).
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
#: The margin of an untrained (deterministic) row: rounding plus precision.
UNTRAINED_MARGIN = round(PUBLISHED_ROUNDING + PRECISION_ALLOWANCE, 6)
UNTRAINED_SOURCE = (
    f"untrained (deterministic): fixed {UNTRAINED_MARGIN:g} = published rounding {PUBLISHED_ROUNDING} + "
    f"precision allowance {PRECISION_ALLOWANCE}"
)
#: Coverage of the decision interval: two one-sided tests at 5 % each.
DEFAULT_LEVEL = 0.90
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


@dataclass(frozen=True)
class SeedNoise:
    """The seed standard deviation of one run's value: ``sigma`` with ``df`` degrees of freedom
    (``inf`` for a declared value, taken as known) and where it comes from."""

    sigma: float
    df: float
    source: str

    def quantile(self, level: float = DEFAULT_LEVEL) -> float:
        """The two-sided ``level`` quantile of the difference's pivot: Student t at ``df``, normal when declared."""
        upper = 0.5 + level / 2
        return float(stats.norm.ppf(upper) if math.isinf(self.df) else stats.t.ppf(upper, self.df))


def pooled_noise(stds: Sequence[float], seeds: Sequence[int], declared: SeedNoise) -> SeedNoise:
    """The pooled seed standard deviation of rows of one kind, ``sqrt(sum (n_i - 1) s_i^2 / sum (n_i - 1))``
    over the rows with ``n_i >= 2`` seeds and a finite spread; ``declared`` when no row has one."""
    pairs = [(float(s), int(n)) for s, n in zip(stds, seeds, strict=True) if n >= 2 and math.isfinite(float(s))]
    df = sum(n - 1 for _, n in pairs)
    if not df:
        return declared
    variance = sum((n - 1) * s**2 for s, n in pairs) / df
    if variance == 0:  # seeds that all agree (a deterministic trainer): nothing to learn the spread from
        return declared
    return SeedNoise(math.sqrt(variance), float(df), f"pooled over {len(pairs)} rows' seeds ({df} df)")


def difference_half_width(noise: SeedNoise, n: int, published_runs: int = 1, level: float = DEFAULT_LEVEL) -> float:
    """Half-width of the interval of reproduced (mean of ``n`` seeds) - published (mean of ``published_runs``
    runs): ``q * sigma * sqrt(1/n + 1/m)`` plus the published value's rounding."""
    scale = noise.sigma * math.sqrt(1 / max(n, 1) + 1 / published_runs)
    return noise.quantile(level) * scale + PUBLISHED_ROUNDING


def equivalence_verdict(low: float, high: float, margin: float) -> str:
    """``reproduced`` when ``[low, high]`` lies within ``[-margin, margin]``, ``not reproduced`` when it lies
    entirely outside, else ``inconclusive``."""
    if -margin <= low and high <= margin:
        return REPRODUCED
    if high < -margin or low > margin:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def equivalence_verdicts(low: np.ndarray, high: np.ndarray, margin: np.ndarray | float) -> np.ndarray:
    """:func:`equivalence_verdict` over arrays (the simulation's form)."""
    inside = (low >= -margin) & (high <= margin)
    outside = (high < -margin) | (low > margin)
    return np.where(inside, REPRODUCED, np.where(outside, NOT_REPRODUCED, INCONCLUSIVE))


@dataclass(frozen=True)
class SharedShift:
    """The mean delta of the trained primary cells, its t-interval over rows, the sign test's two-sided
    p-value, and the verdict against the shift's own margin (``not decided`` with fewer than 3 rows)."""

    rows: int
    mean: float
    low: float
    high: float
    positive: int
    sign_p: float
    verdict: str


def shared_shift(deltas: Sequence[float], margin: float, level: float = DEFAULT_LEVEL) -> SharedShift:
    """Is there a shift shared by every trained row? The interval is Student's t over the rows' deltas
    (their spread holds the seed noise of both sides and each row's own deviation), judged like a cell."""
    values = np.asarray([d for d in deltas if math.isfinite(d)], dtype=float)
    k = len(values)
    positive = int(np.count_nonzero(values > 0))
    if k < 3:
        return SharedShift(k, float(values.mean()) if k else math.nan, math.nan, math.nan, positive, math.nan,
                           "not decided")  # fmt: skip
    mean = float(values.mean())
    half = float(stats.t.ppf(0.5 + level / 2, k - 1) * values.std(ddof=1) / math.sqrt(k))
    nonzero = int(np.count_nonzero(values != 0))
    sign_p = float(stats.binomtest(positive, nonzero, 0.5).pvalue) if nonzero else 1.0
    verdict = equivalence_verdict(mean - half, mean + half, margin)
    return SharedShift(k, mean, mean - half, mean + half, positive, sign_p, verdict)


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


#: The seed spread a run may show before it is evidence of a broken run, as a multiple of the declared seed SD:
#: each declared SD rests on another paper's 8 runs or a maintainer's estimate, so a spread up to twice it is
#: not held against a run (a correct run whose true SD is 1.5x the declared one passes: ``consert gate-rates``).
SPREAD_RATIO = 2.0
#: The one-sided level of the seed-spread test: (n-1) s^2 / (SPREAD_RATIO sigma)^2 against chi^2(n-1).
SPREAD_ALPHA = 0.01
#: The lower tail of the spread test: seeds that spread less than TIGHT_RATIO times the declared SD. A seed never
#: applied gives identical rows (spread 0); the ratio mirrors SPREAD_RATIO (a declared SD may be twice the true one).
TIGHT_RATIO = 0.5
#: Its one-sided level, per test: (n-1) s^2 / (TIGHT_RATIO sigma)^2 below chi^2(n-1)'s TIGHT_ALPHA point. The paper
#: config tests at most 20 spreads (13 rows with seeds, SimCSE, 6 kind-and-size pools): 20 x 0.0005 = 0.01 bounds the
#: gate's false alarms at a true SD half the declared one (Bonferroni), far less at the declared SD.
TIGHT_ALPHA = 0.0005
SEEDS_IDENTICAL, TOO_TIGHT = "seeds identical", "too tight"
#: The verdict of a row that no run can show equivalent at its margin (the published run's own noise alone
#: fills the margin): labelled; it still fails when its interval lies beyond the margin, and joins the block and
#: shift tests, whose only verdict that counts is a failure.
UNDECIDABLE = "undecidable at its margin"
#: The family-wise level of the block-wise shift tests and the standardised-delta test (Holm over them).
BLOCK_ALPHA = 0.05


@dataclass(frozen=True)
class RowDesign:
    """The trained primary rows one decision covers, as arrays over rows: our seeds ``n``, the published runs
    ``m``, each row's margin and declared seed SD, the group its SD is pooled in (kind and model size), its
    block (table and model size) and whether it repeats another row's run (judged, not pooled twice)."""

    n: np.ndarray
    m: np.ndarray
    margin: np.ndarray
    declared: np.ndarray
    group: np.ndarray
    block: np.ndarray
    repeats: np.ndarray


@dataclass(frozen=True)
class RowDecision:
    """Everything :func:`decide_rows` decides, over ``R`` replicates (rows of each array) of the design."""

    verdict: np.ndarray  # R x k: reproduced / not reproduced / inconclusive / undecidable at its margin
    low: np.ndarray  # R x k: the decision interval of reproduced - published
    high: np.ndarray
    sigma: np.ndarray  # R x k: the seed SD used (the larger of the declared and the pooled observed one)
    df: np.ndarray  # R x k: its degrees of freedom (inf where the declared one was used)
    spread_beyond: np.ndarray  # R x k: the row's seed spread, or its group's, fails the spread test
    spread_below: np.ndarray  # R x k: "", or why its spread (or its group's) is below the lower tail: identical, tight
    leans_out: np.ndarray  # R x k: inconclusive, with the point estimate beyond the margin (see decide_rows)
    spared: np.ndarray  # R x k: its interval lies beyond the margin, the failing one (see decide_rows) does not
    factor: np.ndarray  # R x k: the failing interval's seed SD over the declared (1: declared; see failing_noise)
    blocks: tuple[str, ...]  # the blocks tested, then the standardised-delta test
    block_mean: np.ndarray  # R x B: each block's mean delta (NaN for the standardised test)
    block_p: np.ndarray  # R x (B + 1): Holm-adjusted p of each block's shift and of the standardised deltas
    fails: np.ndarray  # R: a row or a block not reproduced


def decide_rows(delta: np.ndarray, spread: np.ndarray, design: RowDesign, shift_margin: float,
                level: float = DEFAULT_LEVEL) -> RowDecision:  # fmt: skip
    """Decide the trained primary rows of ``R`` runs of a design (``delta``, ``spread``: R x k; NaN spread: unknown).

    * **Seed SD.** Pooled per group (kind and model size) over the rows with 2+ seeds (not those repeating
      another row's run); the interval uses the larger of it and the declared SD (Student t at the pooled
      df when the observed one is larger, else the normal quantile: declared, known).
    * **Seed spread, both tails.** Each row's spread and each group's pooled spread are tested against the
      declared SD: ``df s^2 / (SPREAD_RATIO sigma)^2`` beyond chi^2's ``1 - SPREAD_ALPHA`` quantile, or
      ``df s^2 / (TIGHT_RATIO sigma)^2`` below its ``TIGHT_ALPHA`` quantile (``seeds identical`` at spread 0,
      else ``too tight``: a seed never applied), makes the row (or every row of the group) ``not reproduced``.
    * **Failing by distance.** A row is ``not reproduced`` by its delta only when the *failing* interval lies beyond
      its margin: the declared SD, on both sides, times the common factor the *other* groups' seeds show over their
      declared SDs where above 1 (at most :data:`SPREAD_RATIO`, Student t at its df: :func:`failing_noise`). An
      inconclusive row beyond it "leans out"; a row whose own interval lies beyond the margin but the failing one
      does not is inconclusive (``spared``). A row's own seeds never widen what fails it (its group is left out),
      and the published run, from the same training, is taken to be as noisy as ours.
    * **Undecidable.** A row whose interval at the declared SD could not lie within its margin even with
      infinitely many seeds of ours (the published run's noise alone fills it: SimCSE's 0.8 against 1 point)
      is ``undecidable at its margin`` unless one of the rules above, or its failing interval lying beyond the
      margin, makes it ``not reproduced``: a row that cannot be shown equivalent can be shown not equivalent.
    * **Blocks.** Per block (table x model size), the mean delta against the shared-shift margin: p of
      ``|mean| > margin`` from its standard error (the failing SDs, t at their df); beside them, the standardised deltas
      ``sum (delta / sd)^2`` against the noncentral chi^2 of every row off by the margin (errors of mixed
      sign). Holm over these tests at :data:`BLOCK_ALPHA`. Undecidable rows take part: these tests only fail.
    """
    upper = 0.5 + level / 2
    sigma, df, quantile, beyond, below = _spread_tests(spread, design, upper)
    scale = np.sqrt(1 / design.n + 1 / design.m)
    half = quantile * sigma * scale + PUBLISHED_ROUNDING
    verdict = equivalence_verdicts(delta - half, delta + half, design.margin)
    ratio, ratio_df = common_ratio(spread, design, beyond)
    half_failing = failing_half_width(design, ratio, ratio_df, level)
    failing_sd, failing_df = failing_noise(design, ratio, ratio_df)
    beyond_failing = np.abs(delta) > design.margin + half_failing  # the one rule that fails a row by its interval
    spared = (verdict == NOT_REPRODUCED) & ~beyond_failing
    verdict = np.where(spared, INCONCLUSIVE, verdict)
    leans_out = (verdict == INCONCLUSIVE) & beyond_failing
    verdict = np.where(leans_out | beyond | (below != ""), NOT_REPRODUCED, verdict)
    decidable = ~undecidable_rows(design, level)
    verdict = np.where(decidable | (verdict == NOT_REPRODUCED), verdict, UNDECIDABLE)
    blocks, block_mean, p_values = _block_tests(delta, failing_sd, failing_df, design, shift_margin)
    adjusted = np.array([holm(row) for row in p_values]) if p_values.size else p_values
    fails = (verdict == NOT_REPRODUCED).any(axis=1) | (adjusted < BLOCK_ALPHA).any(axis=1)
    factor = failing_sd / (design.declared * scale)
    return RowDecision(verdict, delta - half, delta + half, sigma, df, beyond, below, leans_out, spared, factor, blocks,
                       block_mean, adjusted, fails)  # fmt: skip


def failing_half_width(design: RowDesign, ratio: np.ndarray, ratio_df: np.ndarray,
                       level: float = DEFAULT_LEVEL) -> np.ndarray:  # fmt: skip
    """Half-width of the interval that fails a row by its distance (beyond the margin, leaning out, an undecidable row
    beyond it): ``q * sd + 0.005``, ``sd`` and its df from :func:`failing_noise`; ``q`` Student's t at that df, the
    normal where both sides are at the declared SD."""
    sd, dof = failing_noise(design, ratio, ratio_df)
    upper = 0.5 + level / 2
    finite = np.isfinite(dof)
    quantile = np.where(finite, stats.t.ppf(upper, np.where(finite, dof, 1.0)), stats.norm.ppf(upper))
    return quantile * sd + PUBLISHED_ROUNDING


def failing_noise(design: RowDesign, ratio: np.ndarray, ratio_df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The SD of a row's delta that the rules failing it use, and its degrees of freedom.

    The declared SD times ``ratio`` (R x k: our seeds' SD over the declared, pooled over the *other* groups:
    :func:`common_ratio`) where that exceeds 1, capped at :data:`SPREAD_RATIO` (the most the spread test grants),
    on both sides: the published run comes from the same training as our seeds, so it is taken to be as noisy as
    they show. ``sqrt(1/n + 1/m)`` times that; its df the ratio's (``ratio_df``), inf at the declared SD. The row's
    own seeds never widen what fails it (its group is left out of the ratio)."""
    estimated = (np.nan_to_num(ratio) > 1) & (ratio_df > 0)
    factor = np.where(estimated, np.minimum(np.nan_to_num(ratio), SPREAD_RATIO), 1.0)
    variance = (factor * design.declared) ** 2 * (1 / design.n + 1 / design.m)
    return np.sqrt(variance), np.where(estimated, ratio_df, np.inf)


def common_ratio(spread: np.ndarray, design: RowDesign, beyond: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, our seeds' SD over the declared one, pooled over every *other* group (kind and size) with seeds:
    ``sqrt(sum (n_i - 1) (s_i / declared_i)^2 / sum (n_i - 1))``, and its df (both R x k). The declared SDs all come
    from other papers' runs, so they are taken to be off by one common factor; leaving the row's own group out keeps
    a group's own noise from widening the interval that fails it, and rows whose spread fails the spread test
    (``beyond``) are evidence of a broken run, not of the published run's noise: left out too. NaN (df 0) where no
    other group has seeds."""
    pool = ~design.repeats & (design.n >= 2) & np.isfinite(spread).all(axis=0)
    weights = np.where(pool & ~beyond, design.n - 1, 0.0)
    squares = weights * np.nan_to_num(spread / design.declared) ** 2
    ratio, dof = np.full(spread.shape, np.nan), np.zeros(spread.shape)
    for group in dict.fromkeys(design.group):
        others, columns = design.group != group, design.group == group
        total = weights[:, others].sum(axis=1)
        dof[:, columns] = total[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio[:, columns] = np.sqrt(squares[:, others].sum(axis=1) / total)[:, None]
    return ratio, dof


def undecidable_rows(design: RowDesign, level: float = DEFAULT_LEVEL) -> np.ndarray:
    """Rows whose interval at the declared SD could not lie within the margin with infinitely many seeds of ours."""
    normal = stats.norm.ppf(0.5 + level / 2)
    return normal * design.declared / np.sqrt(design.m) + PUBLISHED_ROUNDING >= design.margin


def _spread_tests(spread: np.ndarray, design: RowDesign, upper: float) -> tuple[np.ndarray, ...]:
    """The seed SD each row's interval uses (the larger of the declared and its group's pooled one), its df and
    quantile, and the spread tests: beyond the upper tail (R x k, bool) and below the lower (R x k, why or "")."""
    known, spread = np.isfinite(spread), np.nan_to_num(spread)
    normal = stats.norm.ppf(upper)
    sigma = np.broadcast_to(design.declared, spread.shape).astype(float).copy()
    df, quantile = np.full(spread.shape, np.inf), np.full(spread.shape, normal)
    beyond, tight, identical = (np.zeros(spread.shape, dtype=bool) for _ in range(3))
    high = lambda dof: stats.chi2.ppf(1 - SPREAD_ALPHA, dof)  # noqa: E731
    low = lambda dof: stats.chi2.ppf(TIGHT_ALPHA, dof)  # noqa: E731
    for group in dict.fromkeys(design.group):
        columns = design.group == group
        pool = columns & ~design.repeats & (design.n >= 2)
        dof = int(np.sum(design.n[pool] - 1))
        if not dof:
            continue
        squares = np.sum((design.n[pool] - 1) * spread[:, pool] ** 2, axis=1)
        declared = float(design.declared[columns][0])
        observed = np.sqrt(squares / dof)
        larger = observed > declared
        sigma[:, columns] = np.where(larger, observed, declared)[:, None]
        df[:, columns] = np.where(larger, dof, np.inf)[:, None]
        quantile[:, columns] = np.where(larger, stats.t.ppf(upper, dof), normal)[:, None]
        beyond[:, columns] |= (squares / (SPREAD_RATIO * declared) ** 2 > high(dof))[:, None]
        whole = known[:, pool].all(axis=1)
        tight[:, columns] |= (whole & (squares / (TIGHT_RATIO * declared) ** 2 < low(dof)))[:, None]
        identical[:, columns] |= (whole & (squares == 0))[:, None]
    own, dof = (design.n >= 2) & known, np.maximum(design.n - 1, 1)
    beyond |= own & ((design.n - 1) * spread**2 / (SPREAD_RATIO * design.declared) ** 2 > high(dof))
    tight |= own & ((design.n - 1) * spread**2 / (TIGHT_RATIO * design.declared) ** 2 < low(dof))
    identical |= own & (spread == 0)
    below = np.where(identical, SEEDS_IDENTICAL, np.where(tight, TOO_TIGHT, ""))
    return sigma, df, quantile, beyond, below


def _block_tests(delta: np.ndarray, sd: np.ndarray, df: np.ndarray, design: RowDesign,
                 margin: float) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:  # fmt: skip
    """Per block, p of ``|mean delta| > margin`` (Student t at the Welch-Satterthwaite df of the rows' variances
    ``(sum v)^2 / sum (v^2 / df)``, ``df`` their SDs' degrees of freedom, inf where declared: the normal when every
    SD is declared); last, p of the standardised deltas beyond every row off by ``margin`` (the rows each counted
    once)."""
    counted = ~design.repeats
    names = tuple(b for b in dict.fromkeys(design.block[counted]))
    means, p_values = [], []
    for block in names:
        columns = counted & (design.block == block)
        mean = delta[:, columns].mean(axis=1)
        variance = sd[:, columns] ** 2
        error = np.sqrt(np.sum(variance, axis=1)) / columns.sum()
        spread = np.sum(variance**2 / df[:, columns], axis=1)  # 0 where every SD is declared (df inf)
        dof = np.where(spread > 0, np.sum(variance, axis=1) ** 2 / np.where(spread > 0, spread, 1.0), np.inf)
        means.append(mean)
        p_values.append(stats.t.sf((np.abs(mean) - margin) / error, dof))
    if counted.sum() >= 2:
        z = delta[:, counted] / sd[:, counted]
        null = np.sum((margin / sd[:, counted]) ** 2, axis=1)
        p_values.append(stats.ncx2.sf(np.sum(z**2, axis=1), int(counted.sum()), null))
        means.append(np.full(delta.shape[0], np.nan))
        names = (*names, "standardised deltas")
    if not p_values:
        return names, np.empty((delta.shape[0], 0)), np.empty((delta.shape[0], 0))
    return names, np.column_stack(means), np.column_stack(p_values)
