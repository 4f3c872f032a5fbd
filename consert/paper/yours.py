"""Your models as rows of the paper's tables (the workflow's ``yours:`` key): their evaluation files, their rows,
and each one's paired difference from the reproduced ConSERT rows of the same table.

A row of yours is evaluated under the paper's protocol (the 7 sets' test splits, the merged Spearman) and set in the
tables it names with no published value and no verdict: it never counts in the gate. Beside it, against each ConSERT
row the table reproduces, the difference of Avg on the same sentence pairs: yours minus the mean over that row's
seeds, with the percentile interval of the same difference over the bootstrap resamples of the test pairs (every
evaluation draws the same resamples of the same pairs, :mod:`consert.evaluate.bootstrap`, so the difference of two
models' replicates is a paired bootstrap). The interval is over sentence pairs only: your model is one run, and
the ConSERT row's seed spread is in its own row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from consert.evaluate.bootstrap import interval
from consert.planner.paths import consert_eval, your_eval, your_label
from consert.planner.plan import plan_runs
from consert.row_labels import YOURS
from consert.verdict.decision import COMPARISON_COLUMNS

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

#: What the row of a model's own Avg says of itself in ``comparison.csv``.
OWN_REASON = "your model: its Avg and the interval over the test pairs; no published value, no verdict"
#: What a paired row says of itself in ``comparison.csv``.
PAIRED_REASON = (
    "your model - the mean over this ConSERT row's seeds, on the same test pairs; interval: the same difference over "
    "the bootstrap resamples of the pairs (seeds not included); no published value, no verdict"
)


def paired_difference(
    yours: float, your_replicates: np.ndarray, seeds: Sequence[float], seed_replicates: Sequence[np.ndarray]
) -> tuple[float, float, float]:
    """(difference, low, high): ``yours`` minus the mean of ``seeds``, and the 95% percentile interval of the same
    difference over paired bootstrap replicates (``your_replicates`` minus the mean of ``seed_replicates``, resample
    by resample). NaN where a value is."""
    if len(seeds) != len(seed_replicates) or not len(seeds):
        raise ValueError(f"expected one replicate vector per seed, got {len(seed_replicates)} for {len(seeds)} seeds")
    shapes = {np.shape(your_replicates), *(np.shape(r) for r in seed_replicates)}
    if len(shapes) != 1:
        raise ValueError(f"replicates of different lengths {sorted(shapes)}: not the same resamples")
    difference = float(yours - np.mean(seeds))
    low, high = interval(np.asarray(your_replicates) - np.mean(np.stack(seed_replicates), axis=0))
    return difference, low, high


def consert_rows(config: WorkflowConfig, artifact: str) -> dict[str, list[str]]:
    """The ConSERT rows ``artifact``'s table reproduces, each with the evaluation files of its seeds (its planned
    runs: ``{method: [evaluation CSV, ...]}``), in the plan's order."""
    rows: dict[str, list[str]] = {}
    for planned in plan_runs(config):
        method = str(planned.labels.get("method", ""))
        if planned.artifact == artifact and method.startswith("ConSERT-"):
            rows.setdefault(method, []).append(consert_eval(planned.spec.run_id))
    return rows


def paired_inputs(config: WorkflowConfig) -> list[str]:
    """The evaluation files the paired rows read: each model of yours and the seeds of the ConSERT rows beside it."""
    paths = [your_eval(model.name) for model in config.yours]
    for artifact in dict.fromkeys(table for model in config.yours for table in model.tables):
        paths += [path for files in consert_rows(config, artifact).values() for path in files]
    return list(dict.fromkeys(paths))


def _avg(path: str) -> tuple[float, np.ndarray | None, pd.Series]:
    """An evaluation's merged Avg, its bootstrap replicates (None where none were kept) and its Avg row."""
    from consert.io import load_replicates

    frame = pd.read_csv(path)
    row = frame[(frame.dataset == "Avg") & (frame.subset == "all")].iloc[0]
    return float(row.spearman), load_replicates(path).get(("Avg", "all")), row


def _same_pairs(path: str, own: pd.Series, others: dict[str, pd.Series]) -> None:
    """Refuse to pair evaluations of different STS files (or of different pairs: their Avg's pair counts)."""
    for other, row in others.items():
        for column in ("data_sha256", "n_pairs"):
            if column in own and column in row and str(own[column]) != str(row[column]):
                raise ValueError(f"{path} and {other}: {column} {own[column]} against {row[column]}; a paired "
                                 "difference needs the same test pairs")  # fmt: skip


def paired_rows(config: WorkflowConfig) -> pd.DataFrame:
    """``comparison.csv``'s rows of yours (:data:`YOURS` status and role, outside the gate): per model and table its
    own Avg with the pairs' interval, then its paired difference from each ConSERT row of that table. Two
    evaluations of other STS files (their ``data_sha256``) are no pairs: a :class:`ValueError` names them."""
    read: dict[str, tuple[float, np.ndarray | None, pd.Series]] = {}

    def evaluation(path: str) -> tuple[float, np.ndarray | None, pd.Series]:  # each file read once
        if path not in read:
            read[path] = _avg(path)
        return read[path]

    rows: list[dict[str, Any]] = []
    for model in config.yours:
        avg, replicates, own = evaluation(your_eval(model.name))
        base = {"row": your_label(model.name), "column": "Avg", "aggregate": "all", "role": YOURS, "status": YOURS,
                "reproduced": avg, "n_seeds": 1, "comparable": False, "setting": own.get("setting", ""),
                "verdict": ""}  # fmt: skip
        for artifact in model.tables:
            interval_of_pairs = {"test_ci_low": own.spearman_ci_low, "test_ci_high": own.spearman_ci_high}
            rows.append({**base, "artifact": artifact, **interval_of_pairs, "reason": OWN_REASON})
            for method, paths in consert_rows(config, artifact).items():
                seeds = [evaluation(path) for path in paths]
                _same_pairs(your_eval(model.name), own, dict(zip(paths, (row for _, _, row in seeds), strict=True)))
                kept = [r for _, r, _ in seeds]
                if replicates is None or any(r is None for r in kept):
                    difference, low, high = avg - float(np.mean([a for a, _, _ in seeds])), np.nan, np.nan
                    why = PAIRED_REASON + " (no bootstrap replicates kept: no interval)"
                else:
                    difference, low, high = paired_difference(avg, replicates, [a for a, _, _ in seeds], kept)
                    why = PAIRED_REASON
                rows.append({**base, "artifact": artifact, "against": method, "n_seeds": len(paths),
                             "delta": difference, "diff_low": low, "diff_high": high, "reason": why})  # fmt: skip
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
