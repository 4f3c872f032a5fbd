"""A model's seven STS sets set among the published rows of the paper's Tables 2 and 3 (``consert evaluate
--beside-paper``).

The published values are the paper's as printed (``results/published``): set beside the model's, never compared
with them as a reproduction (that is :mod:`consert.verdict.compare`'s work, on rows the harness trained). Each
published row keeps the aggregate its STS12-16 numbers were computed with (``aggregates.csv``: ``all``, one Spearman
over a year's merged subsets, for ConSERT's own rows; ``wmean``, SentEval's mean weighted by subset size, for
BERT-flow's), and the model gets one row under each aggregate the published rows use, so that every published row
has a row of the model computed its way beside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from consert.data.senteval import DATASETS, PACKAGE_CHECKOUT
from consert.registry import TABLE2, TABLE3
from consert.row_labels import YOURS
from consert.verdict.decision import aggregate_of, load_aggregates

#: The published tables set beside a model: (artifact key, published file, its title).
BESIDE_TABLES = (
    (TABLE2.key, "consert_table2_unsup.csv", "Table 2"),
    (TABLE3.key, "consert_table3_sup.csv", "Table 3"),
)
#: The published tables of this checkout.
PUBLISHED = PACKAGE_CHECKOUT / "results" / "published"
#: The ``kind`` of a published row (a model's own: :data:`~consert.row_labels.YOURS`).
PUBLISHED_ROW = "published"
SCORES = (*DATASETS, "Avg")
#: The aggregate of a published row whose source does not record it.
UNKNOWN = "unknown"
#: Each aggregate's column in the evaluation frame (the merged Spearman, SentEval's weighted mean).
AGGREGATE_COLUMNS = {"all": "spearman", "wmean": "spearman_wmean"}
COLUMNS = ("rank", "kind", "table", "row", "source", "aggregate", *SCORES, "Avg_ci_low", "Avg_ci_high")


def published_rows(published: Path) -> pd.DataFrame:
    """The published rows of Tables 2 and 3, each with its table, source and aggregate."""
    aggregates = load_aggregates(published)
    frames = []
    for key, file, title in BESIDE_TABLES:
        table = pd.read_csv(published / file)
        names = table.method + (" | " + table.training_data if "training_data" in table else "")
        frames.append(
            table.assign(
                kind=PUBLISHED_ROW,
                table=title,
                row=names,
                aggregate=[_aggregate(aggregates, key, name) for name in names],
            )
        )
    return pd.concat(frames, ignore_index=True)


def _aggregate(aggregates: dict[tuple[str, str], tuple[str, str]], artifact: str, row: str) -> str:
    """The aggregate ``aggregates.csv`` records for a published row; ``unknown`` for a row copied from a cited paper
    that does not say (CLEAR, IS-BERT, CT: the harness reproduces none of them)."""
    try:
        return aggregate_of(aggregates, artifact, row)
    except KeyError:
        return UNKNOWN


def model_rows(frame: pd.DataFrame, aggregates: list[str]) -> pd.DataFrame:
    """One row per pooling of an evaluation frame (``consert evaluate``'s, the test split of the 7 sets) and per
    aggregate of ``aggregates``: its 7 sets, Avg and the Avg's bootstrap interval over sentence pairs."""
    rows = []
    for pooling, block in frame.groupby("pooling", sort=False):
        sets = block[block.subset == "all"].set_index("dataset")
        missing = [name for name in SCORES if name not in sets.index]
        if missing:
            lacks = " ".join(missing)
            raise ValueError(f"--beside-paper: pooling {pooling} lacks {lacks}; the paper's rows have all 7 sets")
        model = block.model.iloc[0] if "model" in block else ""
        for aggregate in aggregates:
            column = AGGREGATE_COLUMNS[aggregate]
            row = {"kind": YOURS, "table": YOURS, "row": f"{model} ({pooling})", "source": block.setting.iloc[0]}
            row |= {"aggregate": aggregate, **{name: float(sets.loc[name, column]) for name in SCORES}}
            for end in ("low", "high"):
                row[f"Avg_ci_{end}"] = float(sets.loc["Avg", f"{column}_ci_{end}"])
            rows.append(row)
    return pd.DataFrame(rows)


def beside_paper(frame: pd.DataFrame, published: Path) -> pd.DataFrame:
    """The model's rows and the published rows of Tables 2 and 3 in one table, by Avg descending (rows the paper
    gives no Avg, without all 7 sets, last), ranked."""
    paper = published_rows(published)
    used = [aggregate for aggregate in AGGREGATE_COLUMNS if aggregate in set(paper["aggregate"])]
    table = pd.concat([model_rows(frame, used), paper], ignore_index=True)
    table = table.sort_values("Avg", ascending=False, na_position="last", kind="stable").reset_index(drop=True)
    table["rank"] = np.arange(1, len(table) + 1)
    return table[list(COLUMNS)]


def render(table: pd.DataFrame) -> str:
    """The table as printed: yours marked, the published values said to be published, the aggregates named."""
    shown = table.assign(
        row=[f"{row} <- yours" if kind == YOURS else row for row, kind in zip(table.row, table.kind, strict=True)],
        source=[
            YOURS if kind == YOURS else f"{name} {source}"
            for kind, name, source in zip(table.kind, table.table, table.source, strict=True)
        ],  # fmt: skip
    )
    shown = shown.drop(columns=["kind", "table", "Avg_ci_low", "Avg_ci_high"])
    interval = [
        f"[{low:.2f}, {high:.2f}]" if pd.notna(low) and pd.notna(high) else ""
        for low, high in zip(table.Avg_ci_low, table.Avg_ci_high, strict=True)
    ]
    left = {column: max(len(column), *(len(text) for text in shown[column])) for column in ("row", "source")}
    text = shown.assign(**{"Avg 95% (pairs)": interval}).to_string(
        index=False,
        na_rep="-",
        float_format=lambda value: f"{value:.2f}",
        formatters={column: (lambda text, width=width: text.ljust(width)) for column, width in left.items()},
        justify="left",
    )
    yours = table[table.kind == YOURS]
    notes = [
        "published: the paper's Tables 2 and 3 as printed (reported: copied from the cited paper; reimplemented: the "
        "authors' own run); set beside yours, not compared as a reproduction",
        "aggregate: all = one Spearman over a year's merged subsets (ConSERT's protocol); wmean = SentEval's mean "
        f"weighted by subset size (BERT-flow's rows); unknown = not recorded by the cited paper; yours is shown under "
        f"all and wmean ({len(yours)} rows)",
        "Avg 95% (pairs): bootstrap over the test sentence pairs of your model (one run: seeds not included)",
        "-: a set the published row does not report (no Avg: listed last)",
    ]
    return "\n".join([text, *(f"  {note}" for note in notes)])
