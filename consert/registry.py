"""The paper's artifacts, each declared once: its key, its files, its kind, its title, its columns and its
place in the summary.

Every part of the harness that names an artifact names it by its constant here: the planner, the verdict, the
claims, the builders and the drawings. Each declaration is one record's in :data:`consert.paper.catalogue.CATALOGUE`,
which owns its other facets (sources, builder, drawing, compared blocks) and which everything that lists
artifacts reads. A test counts the files that spell an artifact's key or file stem: the key lives here, and at
most in one other file, where the artifact is drawn or computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

#: What an artifact is: the paper's ``table``, the paper's ``figure`` (a CSV and its drawing), the harness's own
#: ``diagnostic`` figure, or ``data`` (Table 1, counted from the STS files rather than built from evaluations).
KINDS = ("table", "figure", "diagnostic", "data")


@dataclass(frozen=True)
class Artifact:
    """One artifact of the paper or of the harness, as every part of the harness names it."""

    key: str  # the name the code, the claims and the planned runs use
    stem: str  # its files: results/<stem>.csv, and figures/<stem>.png and .pdf when it is drawn
    kind: str  # one of KINDS
    title: str  # the heading the summary gives it
    label_columns: tuple[str, ...] = ()  # the columns that name a row of a score table
    extra_columns: tuple[str, ...] = ()  # averaged over seeds beside the scores (Table 4's best step)
    summary_place: int | None = None  # its place among the paper's artifacts on the summary page
    needs_family: bool = False  # built only when the config trains the contrastive family

    @property
    def csv(self) -> str:
        """Its CSV's file name under ``results/``."""
        return f"{self.stem}.csv"

    @property
    def drawn(self) -> bool:
        """Whether it has a figure (``figures/<stem>.png``)."""
        return self.kind in ("figure", "diagnostic")

    @property
    def costed(self) -> bool:
        """Whether the cost table has a row for it: the paper's tables and figures built from training runs."""
        return self.kind in ("table", "figure")

    def runs_in(self, config: WorkflowConfig) -> bool:
        """Whether a workflow config builds it."""
        return not self.needs_family or bool(config.family.methods)


TABLE1 = Artifact("table1", "table1_datasets", "data", "Table 1: the STS sets", summary_place=0)
TABLE2 = Artifact("table2", "table2_unsup", "table", "Table 2: unsupervised", ("method", "size"), summary_place=2)
TABLE3 = Artifact("table3", "table3_sup", "table", "Table 3: supervised", ("method", "size", "mode"), summary_place=3)
TABLE4 = Artifact(
    "table4", "table4_batch_size", "table", "Table 4: batch size", ("size", "batch_size"), ("best_step",), 8
)
FAMILY = Artifact(
    "family",
    "table_contrastive_family",
    "table",
    "The contrastive family beside ConSERT",
    ("method", "size"),
    summary_place=9,
    needs_family=True,
)
FIGURE1 = Artifact("figure1", "figure1_scatter", "figure", "Figure 1: predicted against gold similarity", (), (), 1)
FIGURE4 = Artifact("figure4", "figure4_topk", "figure", "Figure 4: removing the most frequent tokens", summary_place=4)
FIGURE5 = Artifact(
    "figure5",
    "figure5_heatmap",
    "figure",
    "Figure 5: augmentation pairs",
    ("size", "view1", "view2", "trained_as"),
    summary_place=5,
)
FIGURE6 = Artifact("figure6", "figure6_fewshot", "figure", "Figure 6: few-shot", ("size", "mode", "n_texts"), (), 6)
FIGURE7 = Artifact(
    "figure7", "figure7_temperature", "figure", "Figure 7: temperature", ("size", "temperature"), summary_place=7
)
DIAGNOSTICS = Artifact("diagnostics", "diagnostics", "diagnostic", "Representation diagnostics")
CURVES = Artifact("curves", "training_curves", "diagnostic", "Training curves")
