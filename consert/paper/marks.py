"""The published values drawn on the reproduced figures and set beside the reproduced tables.

Read from ``results/published``: the numbers the paper's text states for Figures 4, 5 and 7
(``consert_text_values.csv``) and Table 4's rows with their steps (``consert_table4_batch_size.csv``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from consert.verdict.decision import authors_topk_k
from consert.verdict.stated import FIGURE4_POINTS, FIGURE5_CELLS

FIGURE7_RANGE = "best range"


@dataclass(frozen=True)
class Mark:
    """One published value on a figure: where (x, y; a heatmap cell's row and column names), and what."""

    quantity: str
    x: float | str
    y: float | str
    value: float


@dataclass(frozen=True)
class PublishedMarks:
    """Every published mark of the figures, and Table 4's published rows."""

    figure4: tuple[Mark, ...]
    figure5: tuple[Mark, ...]
    figure7_range: tuple[float, float]
    table4: pd.DataFrame

    @classmethod
    def load(cls, published: str | Path) -> PublishedMarks:
        folder = Path(published)
        text = pd.read_csv(folder / "consert_text_values.csv")
        stated = dict(zip(text.quantity, text.value, strict=True))
        best_k = int(stated["best k for BERT-base"])
        # the figure's x counts tokens removed; the paper's k is the authors' (one fewer): authors_topk_k
        removed = {FIGURE4_POINTS[0]: 0, FIGURE4_POINTS[1]: best_k + 1}
        assert authors_topk_k(removed[FIGURE4_POINTS[1]]) == best_k
        figure4 = tuple(Mark(q, removed[q], float(stated[q]), float(stated[q])) for q in FIGURE4_POINTS)
        figure5 = tuple(Mark(q, *FIGURE5_CELLS[q], float(stated[q])) for q in FIGURE5_CELLS)
        low, high = (float(v) for v in re.findall(r"\d+\.\d+", str(stated[FIGURE7_RANGE]))[:2])
        table4 = pd.read_csv(folder / "consert_table4_batch_size.csv")
        return cls(figure4, figure5, (low, high), table4)

    def beside_table4(self, table: pd.DataFrame) -> pd.DataFrame:
        """Table 4 with the published Avg and steps of each batch size beside the reproduced ones."""
        published = self.table4.rename(columns={"avg_spearman": "published_Avg", "steps": "published_steps"})
        merged = table.merge(published, on="batch_size", how="left")
        order = [c for c in table.columns]
        at = order.index("best_step") + 1 if "best_step" in order else len(order)
        order[at:at] = ["published_Avg", "published_steps"]
        return merged[order]
