"""Deciding the compared cells of a comparison: each cell's interval and verdict, the trained primary rows
decided together (:func:`~consert.verdict.yardstick.decide_rows`), the block-wise shift tests and the shared
shift."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from consert.io import text_column
from consert.verdict.cells import gap_row
from consert.verdict.decision import (
    BLOCK,
    FIXED,
    NEAR_BEST,
    PRIMARY,
    SHIFT,
    UNTRAINED,
    Decision,
    block_of,
)
from consert.verdict.yardstick import (
    BLOCK_ALPHA,
    NOT_REPRODUCED,
    SPREAD_ALPHA,
    SPREAD_RATIO,
    TIGHT_ALPHA,
    TIGHT_RATIO,
    RowDesign,
    decide_rows,
    difference_half_width,
    equivalence_verdict,
    pooled_noise,
    shared_shift,
    undecidable_rows,
)


def decide(frame: pd.DataFrame, decision: Decision) -> pd.DataFrame:
    """Intervals and verdicts of the compared cells, the block-wise shift tests and the shared-shift row.

    The comparable trained primary cells are decided together by :func:`~consert.verdict.yardstick.decide_rows`
    (the seed SD pooled per kind and model size, never below the declared one; the seed-spread test; leaning
    out; undecidable rows; the block tests). Other trained cells (diagnostics, rows of another setting) get
    their interval alike, pooled per kind, size, scale and comparability; untrained and fixed cells are judged
    on their point difference; ``not comparable`` for rows outside the paper's setting."""
    frame = frame.copy()
    for column in ("sigma_source", "verdict", "reason"):
        frame[column] = frame[column].astype(object)
    compared = frame.status == "compared"
    trained = compared & ~frame.noise.isin([UNTRAINED, FIXED, NEAR_BEST])
    frame.loc[compared, ["diff_low", "diff_high"]] = frame.loc[compared, ["delta", "delta"]].to_numpy()
    frame.loc[compared & ~trained, ["sigma", "sigma_df"]] = 0.0
    scale = np.where(frame.role == PRIMARY, "avg", "set")
    comparable = frame.comparable.astype(bool).to_numpy()
    repeats = repeats_another_run(frame).to_numpy()
    sizes = text_column(frame, "size").replace("", "base").to_numpy()
    keys = [frame.noise[trained], sizes[trained.to_numpy()], scale[trained.to_numpy()], comparable[trained.to_numpy()]]
    for (kind, size, level, _), group in frame[trained].groupby(keys):
        # one pool per kind, size, scale and comparability; a row that repeats another's run adds no seeds
        pool = group[~repeats[frame.index.get_indexer(group.index)]]
        declared = decision.declared_noise(kind, level, size)
        noise = pooled_noise(pool.seed_std.tolist(), pool.n_seeds.astype(int).tolist(), declared)
        noise = noise if noise.sigma > declared.sigma else declared  # never narrower than the declared SD
        for index, row in group.iterrows():
            half = difference_half_width(noise, int(row.n_seeds), int(row.published_runs), decision.level)
            frame.loc[index, ["sigma", "sigma_df", "sigma_source"]] = [noise.sigma, noise.df, noise.source]
            frame.loc[index, ["diff_low", "diff_high"]] = [row.delta - half, row.delta + half]
    decided = compared & (frame.noise != NEAR_BEST)
    verdicts = [
        equivalence_verdict(low, high, margin) if comparable else "not comparable"
        for low, high, margin, comparable in zip(
            frame.diff_low[decided], frame.diff_high[decided], frame.margin[decided],
            frame.comparable[decided].astype(bool), strict=True,
        )
    ]  # fmt: skip
    frame.loc[decided, "verdict"] = verdicts
    frame.loc[compared & (frame.noise == NEAR_BEST) & ~frame.comparable.astype(bool), "verdict"] = "not comparable"
    rows = trained & (frame.role == PRIMARY) & frame.comparable.astype(bool)
    blocks = _decide_rows(frame, rows.to_numpy(), sizes, repeats, decision) if rows.any() else []
    shift = shift_row(frame, decision)
    extra = blocks + ([shift] if shift is not None else [])
    return pd.concat([frame, pd.DataFrame(extra)], ignore_index=True) if extra else frame


def _decide_rows(frame: pd.DataFrame, rows: np.ndarray, sizes: np.ndarray, repeats: np.ndarray,
                 decision: Decision) -> list[dict[str, Any]]:  # fmt: skip
    """Decide the comparable trained primary cells (``rows``) in place; return the block tests' rows."""
    chosen = frame[rows]
    pairs = list(zip(chosen.noise, sizes[rows], strict=True))
    design = RowDesign(
        n=chosen.n_seeds.to_numpy(dtype=float),
        m=chosen.published_runs.to_numpy(dtype=float),
        margin=chosen.margin.to_numpy(dtype=float),
        declared=np.array([decision.declared_noise(kind, "avg", size).sigma for kind, size in pairs]),
        group=np.array([f"{kind} {size}" for kind, size in pairs]),
        block=np.array([block_of(a, size) for a, size in zip(chosen.artifact, sizes[rows], strict=True)]),
        repeats=repeats[rows],
    )
    spread = chosen.seed_std.to_numpy(dtype=float)
    result = decide_rows(chosen.delta.to_numpy(dtype=float)[None], spread[None], design,
                         decision.shift_margin[0], decision.level)  # fmt: skip
    undecidable = undecidable_rows(design, decision.level)
    for position, index in enumerate(chosen.index):
        why = (
            [frame.at[index, "reason"]]
            if isinstance(frame.at[index, "reason"], str) and frame.at[index, "reason"]
            else []
        )
        if result.spread_beyond[0, position]:
            why.append(f"seed spread beyond {SPREAD_RATIO:g}x the declared SD (chi-square, p < {SPREAD_ALPHA:g})")
        factor = result.factor[0, position]
        published = f"the declared SD x {factor:.2f}, as the other kinds' seeds" if factor > 1 + 1e-9 else "declared"
        if result.leans_out[0, position]:
            why.append(f"leans out: its failing interval ({published}) lies beyond the margin")
        if result.spared[0, position]:
            why.append(f"its interval lies beyond the margin, its failing interval ({published}) does not")
        if result.spread_below[0, position]:
            why.append(f"{result.spread_below[0, position]}: seed spread below {TIGHT_RATIO:g}x the declared SD "
                       f"(chi-square, p < {TIGHT_ALPHA:g}): were the seeds applied?")  # fmt: skip
        if undecidable[position]:
            why.append("the published run's own noise fills the margin: no run can show it equivalent"
                       + (", but it can be shown not equivalent: it is" if result.verdict[0, position] == NOT_REPRODUCED
                          else ""))  # fmt: skip
        kind, df = frame.at[index, "noise"], result.df[0, position]
        declared = decision.declared_noise(kind, "avg", sizes[rows][position])
        source = declared.source if math.isinf(df) else (
            f"pooled per kind and size ({design.group[position]}, {df:g} df), above the declared {declared.sigma:g}"
        )  # fmt: skip
        frame.loc[index, ["sigma", "sigma_df", "diff_low", "diff_high", "verdict", "reason"]] = [
            result.sigma[0, position], result.df[0, position], result.low[0, position], result.high[0, position],
            result.verdict[0, position], "; ".join(why),
        ]  # fmt: skip
        frame.loc[index, "sigma_source"] = source
    margin, reason = decision.shift_margin
    return [
        {
            **gap_row(SHIFT, f"block: {name}", ""),
            "column": "mean delta" if math.isfinite(mean) else "sum of squared standardised deltas",
            "role": BLOCK,
            "delta": mean,
            "noise": "rows",
            "margin": margin,
            "margin_source": reason,
            "verdict": NOT_REPRODUCED if p < BLOCK_ALPHA else "no shift shown",
            "comparable": True,
            "reason": f"Holm-adjusted p = {p:.3g} of a shift beyond the margin (family-wise {BLOCK_ALPHA:g})",
            "status": "compared",
        }
        for name, mean, p in zip(result.blocks, result.block_mean[0], result.block_p[0], strict=True)
    ]


def shift_row(frame: pd.DataFrame, decision: Decision) -> dict[str, Any] | None:
    """The shared-shift test over the comparable trained primary cells (None when there is none)."""
    cells = trained_primary_cells(frame)
    if cells.empty:
        return None
    margin, reason = decision.shift_margin
    result = shared_shift(cells.delta.tolist(), margin, decision.level)
    sign = f"{result.positive} of {result.rows} deltas positive, sign test p = {result.sign_p:.3g}"
    return {
        **gap_row(SHIFT, f"mean delta of {result.rows} trained primary cells", ""),
        "column": "mean delta",
        "role": SHIFT,
        "delta": result.mean,
        "n_seeds": result.rows,
        "noise": "rows",
        "sigma_source": "Student t over the rows' deltas",
        "margin": margin,
        "margin_source": reason,
        "diff_low": result.low,
        "diff_high": result.high,
        "verdict": result.verdict,
        "comparable": result.verdict != "not decided",
        "reason": sign if result.rows >= 3 else f"{result.rows} trained primary cells: a shared shift needs 3",
        "status": "compared",
    }


def trained_primary_cells(comparison: pd.DataFrame) -> pd.DataFrame:
    """Comparable primary cells of trained rows, each run once (a row repeating another's run left out):
    the ones the shared-shift test averages."""
    chosen = (comparison.status == "compared") & (comparison.role == PRIMARY) & comparison.comparable.astype(bool)
    once = ~repeats_another_run(comparison)
    return comparison[chosen & once & ~comparison.noise.isin([UNTRAINED, FIXED, NEAR_BEST])]


def repeats_another_run(comparison: pd.DataFrame) -> pd.Series:
    """Rows whose run is another row's (``same_run_as``): decided, but neither pooled nor averaged twice."""
    named = comparison.same_run_as.astype(object)
    return named.notna() & (named.astype(str).str.strip() != "") & (named.astype(str) != "nan")
