"""Builders of the paper's tables and figure data from evaluation CSVs.

Each builder takes ``(labels, evaluation frame)`` entries and returns the artifact as a frame whose
rows carry the provenance of the evaluations behind them. Seeds are averaged: every score column
``X`` has a companion ``X_std`` (sample standard deviation over seeds, empty for one seed),
``X_seed_ci_low``/``_high`` (Student-t interval of the mean over seeds) and ``X_ci_low``/``_high``
(the test-set bootstrap interval, averaged over seeds); ``n_seeds`` says how many runs each row
averages. No aggregate skips a missing part: a seed's NaN makes the row's mean, SD and interval NaN. A seed is
averaged once: two evaluations of one row with the same seed are refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from consert.data.senteval import DATASETS
from consert.verdict.decision import MULTI_SUBSET, authors_topk_k

SCORE_COLUMNS = (*DATASETS, "Avg")


#: Provenance carried from the evaluation CSVs into every artifact row (first seed's values; the
#: per-seed details stay in the evaluation CSVs).
PROVENANCE_COLUMNS = (
    "setting",
    "nli",
    "model",
    "base_model",
    "base_weights",
    "base_weights_evidence",
    "pooling",
    "data_sha256",
    "data_verified",
    "harness_commit",
    "packages",
)


Entry = tuple[dict[str, Any], pd.DataFrame]


#: SentEval's aggregates, kept beside the merged Spearman as ``<set>_mean`` and ``<set>_wmean``.
SUBSET_AGGREGATES = ("mean", "wmean")


#: Every score a table row averages over seeds (with ``_std`` and a seed interval): the merged
#: Spearman of each set and Avg, and SentEval's aggregates of the multi-subset sets.
SEEDED_SCORES = (*SCORE_COLUMNS, *(f"{c}_{a}" for a in SUBSET_AGGREGATES for c in MULTI_SUBSET))


def per_set_scores(evaluation: pd.DataFrame) -> dict[str, float]:
    """``{dataset: Spearman}`` of the "all" rows (the paper's protocol), Avg included, plus
    ``{set}_mean`` / ``{set}_wmean`` (SentEval's aggregates) for the multi-subset sets and Avg."""
    rows = evaluation[evaluation.subset == "all"]
    scores = dict(zip(rows.dataset, rows.spearman.astype(float), strict=True))
    for aggregate in SUBSET_AGGREGATES:
        if f"spearman_{aggregate}" in rows:
            values = dict(zip(rows.dataset, rows[f"spearman_{aggregate}"].astype(float), strict=True))
            scores.update({f"{name}_{aggregate}": values[name] for name in MULTI_SUBSET if name in values})
    for aggregate in ("", *(f"_{a}" for a in SUBSET_AGGREGATES)):
        for end in ("low", "high"):
            column = f"spearman{aggregate}_ci_{end}"
            if column in rows:
                values = dict(zip(rows.dataset, rows[column].astype(float), strict=True))
                names = SCORE_COLUMNS if not aggregate else MULTI_SUBSET
                scores.update({f"{name}{aggregate}_ci_{end}": values[name] for name in names if name in values})
    return scores


def seed_interval(values: pd.Series, level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean over seeds (NaN for a single seed, and where a seed's value is NaN)."""
    from scipy import stats

    if len(values) < 2 or values.isna().any():
        return np.nan, np.nan
    half = stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return float(values.mean() - half), float(values.mean() + half)


def summarize(entries: Iterable[Entry], extra: Sequence[str] = ()) -> pd.DataFrame:
    """One row per distinct label set (seed ignored): mean and std over seeds of every score column, NaN where a
    seed's value is. A label set given twice with the same seed is a :class:`ValueError` (it would be averaged twice).

    ``extra`` names further numeric columns of the evaluation frames (e.g. ``best_step``) to average.
    """
    groups: dict[tuple, list[Entry]] = {}
    for labels, evaluation in entries:
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "seed"))
        members = groups.setdefault(key, [])
        if "seed" in labels and any(other.get("seed") == labels["seed"] for other, _ in members):
            row = ", ".join(f"{name} {value}" for name, value in key)
            raise ValueError(f"{row}: seed {labels['seed']} is given twice; expected each seed once")
        members.append((labels, evaluation))
    rows = []
    for key, members in groups.items():
        row: dict[str, Any] = dict(key)
        scores = pd.DataFrame([per_set_scores(ev) for _, ev in members])
        for column in scores.columns:
            row[column] = scores[column].mean(skipna=False)
            if column in SEEDED_SCORES:
                row[f"{column}_std"] = scores[column].std(ddof=1, skipna=False) if len(members) > 1 else np.nan
                row[f"{column}_seed_ci_low"], row[f"{column}_seed_ci_high"] = seed_interval(scores[column])
        for column in extra:
            values = [float(ev[column].iloc[0]) for _, ev in members]
            row[column] = float(np.mean(values))
            row[f"{column}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else np.nan
        row["n_seeds"] = len(members)
        row["seeds"] = ";".join(str(labels.get("seed", "")) for labels, _ in members)
        first = members[0][1]
        for column in PROVENANCE_COLUMNS:
            row[column] = first[column].iloc[0] if column in first.columns else ""
        rows.append(row)
    return pd.DataFrame(rows)


def score_table(entries: Iterable[Entry], label_columns: Sequence[str], extra: Sequence[str] = ()) -> pd.DataFrame:
    """A wide table (label columns, the 7 sets + Avg and their stds, provenance) in entry order."""
    frame = summarize(entries, extra)
    scores = [c for c in SCORE_COLUMNS if c in frame.columns]
    ordered = [
        *label_columns,
        *scores,
        *extra,
        *(f"{c}_std" for c in (*scores, *extra)),
        *(f"{c}_{a}" for a in SUBSET_AGGREGATES for c in MULTI_SUBSET),
        *(f"{c}_{a}_std" for a in SUBSET_AGGREGATES for c in MULTI_SUBSET),
        *(f"{c}_{kind}ci_{end}" for c in scores for kind in ("", "seed_") for end in ("low", "high")),
        *(f"{c}_{a}_ci_{end}" for a in SUBSET_AGGREGATES for c in MULTI_SUBSET for end in ("low", "high")),
        *(f"{c}_{a}_seed_ci_{end}" for a in SUBSET_AGGREGATES for c in MULTI_SUBSET for end in ("low", "high")),
        "n_seeds",
        "seeds",
        *PROVENANCE_COLUMNS,
    ]
    return frame[[c for c in ordered if c in frame.columns]]


def heatmap_matrix(figure5: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    """Figure 5 as a view1 x view2 matrix of average Spearman, rows and columns in ``order``."""
    return figure5.pivot(index="view1", columns="view2", values="Avg").reindex(index=order, columns=order)


def topk_table(curves: Iterable[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """Figure 4 data: one row per (model label, k) with the average Spearman and each set's.

    ``k`` counts the tokens removed; ``authors_k`` is the same point in the authors' convention."""
    frames = []
    for label, curve in curves:
        wide = curve.pivot(index="k", columns="dataset", values="spearman").reset_index()
        provenance = curve.drop_duplicates("k").set_index("k")
        wide["setting"] = wide.k.map(provenance["setting"]) if "setting" in provenance else ""
        frames.append(wide.assign(model=label))
    table = pd.concat(frames, ignore_index=True)
    table["authors_k"] = table.k.map(authors_topk_k).astype("Int64")
    return table[["model", "k", "authors_k", *SCORE_COLUMNS, "setting"]]
