"""The paper's artifacts, each declared once: its key, its files, its kind, its title, its columns and its
place in the summary.

Everything that names an artifact reads this module: the workflow's targets (``workflow/rules/common.smk``),
the builders and their sources (:mod:`consert.paper.artifacts`), the drawings (:mod:`consert.paper.figures`),
the cost table, the summary, the diagnostics, the comparison and the claims. A test counts the files that
spell an artifact's key or file stem: the key lives here, and at most in one other file, where the artifact
is drawn or computed.

Adding an artifact: declare it here, give it its sources in :data:`consert.paper.artifacts.ARTIFACT_SOURCES` and, for a
figure, its drawing in :data:`consert.paper.figures.DRAW` (three files; the tests check that each declared
artifact has both).
"""

from __future__ import annotations

import re
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

#: Every artifact, tables before figures (the order of the workflow's targets and of the cost table).
ARTIFACTS = (TABLE1, TABLE2, TABLE3, TABLE4, FAMILY, FIGURE1, FIGURE4, FIGURE5, FIGURE6, FIGURE7, CURVES, DIAGNOSTICS)
BY_KEY = {artifact.key: artifact for artifact in ARTIFACTS}

#: The artifacts whose rows are ConSERT's training runs (the sweeps and the tables the plan fills).
SWEEPS = (TABLE4, FIGURE5, FIGURE6, FIGURE7)
#: The artifacts whose rows carry a seed spread: the score tables.
SCORED = (TABLE2, TABLE3, TABLE4, FAMILY, FIGURE5, FIGURE6, FIGURE7)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown artifact kind {kind!r}; choose from {KINDS}")


def of_kind(kind: str, config: WorkflowConfig) -> list[Artifact]:
    """The artifacts of ``kind`` that ``config`` builds, in :data:`ARTIFACTS`' order."""
    _check_kind(kind)
    return [artifact for artifact in ARTIFACTS if artifact.kind == kind and artifact.runs_in(config)]


def stems(kind: str, config: WorkflowConfig) -> dict[str, str]:
    """``{file stem: key}`` of the artifacts of ``kind`` that ``config`` builds (the workflow's wildcards)."""
    return {artifact.stem: artifact.key for artifact in of_kind(kind, config)}


def stem_pattern(kind: str) -> str:
    """A regular expression matching the file stem of every declared artifact of ``kind``, whatever a config builds
    (the workflow's wildcard constraint for the rule that builds that kind: a new declaration needs no new pattern)."""
    _check_kind(kind)
    return "|".join(re.escape(artifact.stem) for artifact in ARTIFACTS if artifact.kind == kind)


def in_summary() -> list[Artifact]:
    """The paper's artifacts in the summary's order (the paper's)."""
    placed = [artifact for artifact in ARTIFACTS if artifact.summary_place is not None]
    return sorted(placed, key=lambda artifact: artifact.summary_place)
