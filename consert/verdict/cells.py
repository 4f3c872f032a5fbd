"""One reproduced cell beside its published value: the cell's reproduced number and interval, judged by
the equivalence test into a row of ``comparison.csv`` (or a gap: a published row with nothing reproduced)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from consert.data.senteval import DATASETS
from consert.verdict.decision import (
    DIAGNOSTIC,
    FIXED,
    MULTI_SUBSET,
    PRIMARY,
    UNTRAINED,
    ComparisonRow,
    Decision,
    RowKinds,
    aggregate_of,
    not_comparable_reason,
)
from consert.verdict.yardstick import (
    UNTRAINED_MARGIN,
    UNTRAINED_SOURCE,
)


def cell_value(row: pd.Series, column: str, aggregate: str) -> tuple[Any, str, str, str]:
    """(reproduced value, the cell's aggregate label, why it is not comparable or "", the column it was read from)."""
    if column not in MULTI_SUBSET:
        return row.get(column), "test split" if column in DATASETS else "", "", column
    if aggregate == "unknown":
        why = "the published value's aggregate over subsets is unknown"
        return row.get(column), "unknown", why, column
    name = column if aggregate == "all" else f"{column}_{aggregate}"
    return row.get(name), aggregate, "", name


def bootstrap_bounds(row: pd.Series, name: str) -> tuple[float, float]:
    """A cell's test-set bootstrap interval (averaged over seeds), or NaNs: the uncertainty of paired
    comparisons on the same pairs, shown beside the cell; the verdict uses the decision interval."""
    low = pd.to_numeric(row.get(f"{name}_ci_low"), errors="coerce")
    high = pd.to_numeric(row.get(f"{name}_ci_high"), errors="coerce")
    return (float(low), float(high)) if pd.notna(low) and pd.notna(high) else (np.nan, np.nan)


@dataclass
class Context:
    """What every cell of one comparison is built with."""

    aggregates: dict[tuple[str, str], tuple[str, str]]
    kinds: RowKinds
    decision: Decision


def published_row_cells(
    artifact: str,
    published: pd.DataFrame,
    reproduced: pd.DataFrame,
    key_pairs: list[tuple[str, str, str | None]],
    columns: list[tuple[str, str]],
    context: Context,
    report_gaps: bool = True,
    margin_key: str | None = None,
) -> list[dict[str, Any]]:
    """Rows for each (published row name, reproduced row name, size) and (published col, reproduced col);
    a published row without its reproduced row gives one gap row (see :func:`gap_row`)."""
    out = []
    primary = context.decision.primary_column(artifact)
    for published_name, reproduced_name, size in key_pairs:
        pub = published[published.key == published_name]
        rep = reproduced[reproduced.key == reproduced_name]
        if pub.empty:
            raise ValueError(f"{artifact}: the published table has no row {published_name!r}")
        published_columns = [c for c, _ in columns if c in pub]
        if published_columns and "source" in pub and pub[published_columns].isna().all(axis=None):
            out.append(unpublished_row(artifact, published_name, rep, str(pub.iloc[0].source)))
            continue
        if rep.empty:
            if report_gaps:
                out.append(gap_row(artifact, published_name, f"no reproduced row named {reproduced_name!r}"))
            continue
        pub_row, rep_row = pub.iloc[0], rep.iloc[0]
        reason = not_comparable_reason(rep_row, size)
        row_aggregate = aggregate_of(context.aggregates, artifact, published_name)
        decided = False
        for published_column, reproduced_column in columns:
            value, aggregate, why, name = cell_value(rep_row, reproduced_column, row_aggregate)
            role = PRIMARY if published_column == primary or primary == "*" else DIAGNOSTIC
            row = cell_row(
                artifact, published_name, published_column, pub_row.get(published_column), value, rep_row,
                context, role, "; ".join(r for r in (reason, why) if r), aggregate, name, margin_key,
            )  # fmt: skip
            if row is not None:
                out.append({**row, "size": size or ""})
                decided |= role == PRIMARY
            elif role == PRIMARY and pd.notna(pd.to_numeric(pub_row.get(published_column), errors="coerce")):
                why = f"the reproduced row {reproduced_name!r} has no value for its primary cell ({name})"
                gap = gap_row(artifact, published_name, why)  # a row cannot pass without its primary cell
                out.append({**gap, "column": published_column if primary == "*" else gap["column"]})
    return out


def read_seeded_table(path: Path) -> pd.DataFrame:
    """A reproduced table (its ``seeds`` column lists each row's seeds, "1;2;3"), refused in one
    :class:`ValueError` line when a row lists a seed twice: it would stand for two runs where one ran."""
    table = pd.read_csv(path).copy()  # .copy(): one block per dtype (keying a wide table would fragment it)
    for line, seeds in enumerate(table.get("seeds", pd.Series(dtype=str)), start=2):  # line 1: the header
        labels = [label.strip() for label in str(seeds if pd.notna(seeds) else "").split(";") if label.strip()]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(
                f"{path}:{line}: seed {repeated[0]} is listed twice (seeds {seeds}); expected each seed once"
            )
    return table


def cell_row(
    artifact: str,
    row: str,
    column: str,
    published: Any,
    reproduced: Any,
    reproduced_row: pd.Series,
    context: Context,
    role: str,
    reason: str,
    aggregate: str = "",
    name: str | None = None,
    margin_key: str | None = None,
) -> dict[str, Any] | None:
    """One comparison row (its interval and verdict are set by :func:`decide`), or None when either value
    is missing. ``reproduced_row`` is the reproduced table's row the value comes from; ``name`` its column
    (its ``_std`` and ``_ci_*`` columns are read beside it)."""
    published_value = pd.to_numeric(published, errors="coerce")
    reproduced_value = pd.to_numeric(reproduced, errors="coerce")
    if pd.isna(published_value) or pd.isna(reproduced_value):
        return None
    name = name or column
    noise, runs, same_run_as = context.kinds.of(artifact, row)
    if margin_key is not None:  # a count judged by a fixed tolerance (Table 4's steps)
        noise = FIXED
    if noise == UNTRAINED:
        margin, margin_source = UNTRAINED_MARGIN, UNTRAINED_SOURCE
    else:
        margin, margin_source = context.decision.margin(margin_key or artifact)
    seeds = pd.to_numeric(reproduced_row.get("n_seeds"), errors="coerce")
    std = pd.to_numeric(reproduced_row.get(f"{name}_std"), errors="coerce")
    low, high = bootstrap_bounds(reproduced_row, name)
    return {
        **gap_row(artifact, row, reason),
        "column": column,
        "aggregate": aggregate,
        "role": role,
        "published": float(published_value),
        "reproduced": float(reproduced_value),
        "delta": float(reproduced_value) - float(published_value),
        "n_seeds": int(seeds) if pd.notna(seeds) else 1,
        "seed_std": float(std) if pd.notna(std) else np.nan,
        "published_runs": runs,
        "same_run_as": same_run_as,
        "noise": noise,
        "margin": float(margin),
        "margin_source": margin_source,
        "verdict": "",
        "test_ci_low": low,
        "test_ci_high": high,
        "comparable": not reason,
        "setting": reproduced_row.get("setting", ""),
        "status": "compared",
    }


def gap_row(artifact: str, row: str, reason: str) -> dict[str, Any]:
    """A published row (``*``: a whole artifact) with nothing reproduced to compare it with."""
    return asdict(
        ComparisonRow(
            artifact, row, "*", role=PRIMARY, verdict="missing", comparable=False, reason=reason, status="missing"
        )
    )


def unpublished_row(artifact: str, row: str, reproduced: pd.DataFrame, citation: str) -> dict[str, Any]:
    """A row reproduced (or planned) with no published value to compare it with: listed, never a gate failure."""
    return {
        **gap_row(artifact, row, f"no published value ({citation})"),
        "status": "no published value",
        "verdict": "not comparable",
        "setting": reproduced.iloc[0].get("setting", "") if not reproduced.empty else "",
    }
