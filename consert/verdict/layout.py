"""The comparison in the paper's layout: one row per published row of each table, each column of the 7 sets and
Avg with ours, our seed SD, the published value, the difference, its decision interval and the verdict
(``results/paper_tables.csv``, written by the comparison job: the table CSVs cannot hold it, since it reads them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from consert.row_labels import YOURS
from consert.verdict.compare import ComparedBlock, ComparedRows, published_cells
from consert.verdict.decision import PRIMARY, SCORE_COLUMNS, SCORE_PAIRS

#: Each cell's numbers, by the comparison's column they come from.
CELL_PARTS = {
    "ours": "reproduced",
    "sd": "seed_std",
    "published": "published",
    "delta": "delta",
    "low": "diff_low",
    "high": "diff_high",
    "verdict": "verdict",
}
#: What each row says once: whether it was compared, which column decides it, its verdict, where it ran and why.
ROW_COLUMNS = ("artifact", "row", "status", "primary", "verdict", "comparable", "n_seeds", "setting", "reason")


def layout_columns() -> list[str]:
    """The file's columns: the row's own, then ``<set> <part>`` for each set and Avg (:data:`CELL_PARTS`)."""
    return [*ROW_COLUMNS, *(f"{column} {part}" for column in SCORE_COLUMNS for part in CELL_PARTS)]


def laid_out(blocks: Sequence[ComparedBlock]) -> list[str]:
    """The compared artifacts of ``blocks`` whose published rows are the paper's rows of the 7 sets and Avg, in the
    blocks' order (Table 2, BERT-whitening's, SG-OPT's, Table 3, the contrastive family)."""
    return list(dict.fromkeys(block.artifact for block in blocks if isinstance(block, ComparedRows)
                              and block.of_the_paper and block.columns == SCORE_PAIRS))  # fmt: skip


def paper_layout(
    comparison: pd.DataFrame, blocks: Sequence[ComparedBlock], published: Path | None = None
) -> pd.DataFrame:
    """``comparison.csv``'s cells of the artifacts ``blocks`` lay out (:func:`laid_out`) with one row per published
    row, its cells side by side; a row's verdict, status and setting are its primary cell's (a row decided set by
    set, BERT-whitening's, has no single primary: its verdict column stays empty and each set's verdict says). A
    published row with nothing to compare (not run, missing: one gap row in the comparison) is a row too, with its
    published numbers when ``published`` (the folder of the published tables) is given. Rows of yours are not
    published rows: the tables hold them."""
    shown = laid_out(blocks)
    chosen = comparison.artifact.isin(shown) & (comparison.row != "*")  # "*": a whole artifact missing
    cells = comparison[chosen & (comparison.status != YOURS)]  # rows of yours have no published row
    cells = cells[cells.column.isin(SCORE_COLUMNS) | (cells.column == "*")]
    values = _published_values(blocks, shown, published) if published is not None else {}
    rows = []
    for (artifact, row), group in cells.groupby(["artifact", "row"], sort=False):
        primary = group[group.role == PRIMARY]
        first = (primary if len(primary) == 1 else group).iloc[0]
        decided = len(primary) == 1 and first.column != "*"
        record = {
            "artifact": artifact,
            "row": row,
            "status": first.status,
            "primary": first.column if decided else "",
            "verdict": first.verdict if decided or first.status != "compared" else "",
            "comparable": first.comparable,
            "n_seeds": first.n_seeds,
            "setting": first.setting,
            "reason": first.reason,
        }
        for column, value in values.get((artifact, row), {}).items():
            record[f"{column} published"] = value
        for cell in group[group.column != "*"].itertuples():
            for part, source in CELL_PARTS.items():
                record[f"{cell.column} {part}"] = getattr(cell, source)
        rows.append(record)
    return pd.DataFrame(rows, columns=layout_columns())


def _published_values(
    blocks: Sequence[ComparedBlock], shown: list[str], published: Path
) -> dict[tuple[str, str], dict[str, float]]:
    """``{(artifact, row): {column: published}}`` of the published rows of the ``shown`` artifacts."""
    cells = published_cells(blocks, published)
    cells = cells[cells.artifact.isin(shown) & cells.column.isin(SCORE_COLUMNS)]
    return {key: dict(zip(group.column, group.published, strict=True))
            for key, group in cells.groupby(["artifact", "row"], sort=False)}  # fmt: skip
