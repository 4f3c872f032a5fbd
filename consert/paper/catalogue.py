"""Every artifact of the paper and of the harness, each one record that owns all its facets: its declaration (key,
files, kind, title, columns, place in the summary: :class:`consert.registry.Artifact`), its sources (the evaluation
CSVs its rows come from), its builder, its drawing, the published values set beside it, and its compared blocks
(which published rows its rows are judged against).

Everything that lists artifacts reads :data:`CATALOGUE`: the workflow's rule patterns and final targets
(:func:`stem_pattern`, :func:`stems`), the cost table, the summary, the comparison's blocks (:data:`COMPARED`) and
the one-row targets. The lower layers (the planner, the verdict) name the few artifacts they plan or judge by the
registry's constants.

Adding a table from runs that exist takes this file and its published CSV (and, when its rows are trained, its
margin in ``decision.yaml``): a record whose declaration names its file, whose sources are the runs' evaluation
files and whose compared block pairs its published rows with its rows, judged as it declares
(:class:`consert.verdict.decision.Judged`). ``tests/workflow/test_new_table.py`` adds one that way. A sweep
declared in :mod:`consert.sweeps` without a record here gets one: its planned runs' rows, drawn as a curve over its
values when it is a figure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from baselines import BASELINE_SPECS, BaselineSpec
from consert.paper import artifacts, figures
from consert.paper.artifacts import ArtifactSource, Reader
from consert.paper.marks import PublishedMarks
from consert.registry import (
    CURVES,
    DIAGNOSTICS,
    FAMILY,
    FIGURE1,
    FIGURE4,
    FIGURE5,
    FIGURE6,
    FIGURE7,
    KINDS,
    TABLE1,
    TABLE2,
    TABLE3,
    TABLE4,
    Artifact,
)
from consert.sweeps import AXES, SweepAxis
from consert.verdict import compare as compared
from consert.verdict.compare import ComparedBlock

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

#: An artifact's sources under a workflow config.
Sources = Callable[["WorkflowConfig"], list[ArtifactSource]]
#: An artifact's table from its sources (:mod:`consert.paper.artifacts`' builders).
Builder = Callable[[Artifact, list[ArtifactSource], Reader], pd.DataFrame]
#: A figure's drawing of its table: ``(table, paths, published marks or None, stamp=...)``.
Drawing = Callable[..., object]


@dataclass(frozen=True)
class PaperArtifact:
    """One artifact with every facet of it: its declaration, where its rows come from, how its table is built and
    drawn, what is set beside it, and which published rows it is compared with."""

    declared: Artifact
    sources: Sources | None = None  # None: not built from evaluations (Table 1, counted from the STS files)
    build: Builder = artifacts.score_rows
    draw: Drawing | None = None  # its figure, for a figure or a diagnostic
    beside: Callable[[PublishedMarks, pd.DataFrame], pd.DataFrame] | None = None  # published values in its CSV
    compared: tuple[ComparedBlock, ...] = ()  # its blocks of the comparison, each reading its CSV

    @property
    def key(self) -> str:
        """Its declaration's key."""
        return self.declared.key

    def sources_under(self, config: WorkflowConfig) -> list[ArtifactSource]:
        """Its sources under ``config``: its own, then the rows of the baselines that name it as their table
        (:func:`consert.paper.artifacts.tabled_baseline_sources`); none where it is not built from evaluations."""
        if self.sources is None:
            return []
        return [*self.sources(config), *artifacts.tabled_baseline_sources(config, self.key)]


def _planned(artifact: Artifact) -> Sources:
    """The sources of an artifact whose rows are the ConSERT runs the plan gives it."""
    return lambda config: artifacts.planned_sources(config, artifact.key)


#: The artifacts with records of their own, tables before figures.
_OWN: tuple[PaperArtifact, ...] = (
    PaperArtifact(TABLE1),
    PaperArtifact(TABLE2, artifacts.table2_sources, compared=compared.TABLE2_COMPARED),
    PaperArtifact(TABLE3, artifacts.table3_sources, compared=compared.TABLE3_COMPARED),
    PaperArtifact(TABLE4, _planned(TABLE4), beside=PublishedMarks.beside_table4, compared=compared.TABLE4_COMPARED),
    PaperArtifact(FAMILY, artifacts.family_sources, compared=compared.FAMILY_COMPARED),
    PaperArtifact(FIGURE1, artifacts.prediction_sources, artifacts.prediction_rows, figures.figure1),
    PaperArtifact(
        FIGURE4, artifacts.topk_sources, artifacts.topk_rows, figures.figure4, compared=compared.FIGURE4_COMPARED
    ),
    PaperArtifact(
        FIGURE5, _planned(FIGURE5), artifacts.heatmap_rows, figures.figure5, compared=compared.FIGURE5_COMPARED
    ),
    PaperArtifact(FIGURE6, _planned(FIGURE6), draw=figures.figure6),
    PaperArtifact(FIGURE7, _planned(FIGURE7), draw=figures.figure7),
    PaperArtifact(CURVES, artifacts.curve_sources, artifacts.curve_rows, figures.training_curves),
    PaperArtifact(DIAGNOSTICS, artifacts.diagnostics_sources, artifacts.diagnostic_rows, figures.diagnostics),
)


def _swept(axis: SweepAxis) -> PaperArtifact:
    """The record of a sweep declared without one above: its planned runs' rows, drawn as a curve over its values
    (:func:`consert.paper.figures.sweep_curve`) when it is a figure."""
    if axis.declared.kind not in ("table", "figure"):
        raise ValueError(f"sweep {axis.declared.key}: kind {axis.declared.kind!r}; a sweep is a table or a figure")
    draw = partial(figures.sweep_curve, x=axis.column, title=axis.declared.title) if axis.declared.drawn else None
    return PaperArtifact(axis.declared, _planned(axis.declared), draw=draw)


def _with_sweeps(records: tuple[PaperArtifact, ...]) -> tuple[PaperArtifact, ...]:
    """``records`` with a record for each sweep that has none, after the last record of its kind."""
    placed = list(records)
    for axis in AXES:
        if axis.declared not in {record.declared for record in placed}:
            last = max(i for i, record in enumerate(placed) if record.declared.kind == axis.declared.kind)
            placed.insert(last + 1, _swept(axis))
    return tuple(placed)


#: Every artifact, tables before figures (the order of the workflow's targets, of the cost table and of the
#: comparison's blocks): the records above and every other sweep's (:data:`consert.sweeps.AXES`).
CATALOGUE = _with_sweeps(_OWN)
BY_KEY = {record.key: record for record in CATALOGUE}
#: Every declaration, in the catalogue's order.
ARTIFACTS = tuple(record.declared for record in CATALOGUE)
#: Every compared block, in the order of the comparison's rows.
COMPARED: tuple[ComparedBlock, ...] = tuple(block for record in CATALOGUE for block in record.compared)
#: Each artifact's CSV under the results folder, by key.
CSV_FILES = {artifact.key: artifact.csv for artifact in ARTIFACTS}


def check_baseline_tables(specs: Iterable[BaselineSpec]) -> None:
    """Each baseline record that names a table names a score table of the catalogue (its rows are scores of the 7
    sets): a mistyped key would leave the baseline unplanned without a fault. A one-line :class:`ValueError`."""
    tables = {
        record.key for record in CATALOGUE if record.declared.kind == "table" and record.build is artifacts.score_rows
    }
    for spec in specs:
        if spec.table and spec.table not in tables:
            raise ValueError(
                f"baseline {spec.name!r}: table {spec.table!r} is not a score table ({', '.join(sorted(tables))})"
            )


check_baseline_tables(BASELINE_SPECS.values())


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown artifact kind {kind!r}; choose from {KINDS}")


def of_kind(kind: str, config: WorkflowConfig) -> list[Artifact]:
    """The artifacts of ``kind`` that ``config`` builds, in the catalogue's order."""
    _check_kind(kind)
    return [artifact for artifact in ARTIFACTS if artifact.kind == kind and artifact.runs_in(config)]


def stems(kind: str, config: WorkflowConfig) -> dict[str, str]:
    """``{file stem: key}`` of the artifacts of ``kind`` that ``config`` builds (the workflow's wildcards)."""
    return {artifact.stem: artifact.key for artifact in of_kind(kind, config)}


def stem_pattern(kind: str) -> str:
    """A regular expression matching the file stem of every artifact of ``kind`` in the catalogue, whatever a config
    builds (the workflow's wildcard constraint for the rule that builds that kind: a new record needs no new
    pattern)."""
    _check_kind(kind)
    return "|".join(re.escape(artifact.stem) for artifact in ARTIFACTS if artifact.kind == kind)


def in_summary() -> list[Artifact]:
    """The paper's artifacts in the summary's order (the paper's)."""
    placed = [artifact for artifact in ARTIFACTS if artifact.summary_place is not None]
    return sorted(placed, key=lambda artifact: artifact.summary_place)


def compared_artifacts(config: WorkflowConfig) -> list[Artifact]:
    """The artifacts ``config`` builds that published rows are compared with."""
    return [record.declared for record in CATALOGUE if record.compared and record.declared.runs_in(config)]


def compared_names(artifact: Artifact) -> list[str]:
    """The compared artifacts of the paper an artifact's rows feed (Table 2's: ``table2``, ``whitening_table1``,
    ``sgopt_table1``; the stand-in's anchor is not the paper's)."""
    return list(dict.fromkeys(block.artifact for block in BY_KEY[artifact.key].compared if block.of_the_paper))


def declaration(key: str) -> Artifact | None:
    """The declaration of the artifact ``key``, or None where ``key`` is a compared block's name only
    (``whitening_table1``, ``sgopt_table1``: rows of Table 2 judged against another paper's table)."""
    return BY_KEY[key].declared if key in BY_KEY else None


def record_of(block: ComparedBlock) -> PaperArtifact:
    """The record a compared block belongs to."""
    return next(record for record in CATALOGUE if block in record.compared)


def inputs(artifact: str, config: WorkflowConfig) -> list[str]:
    """The evaluation files an artifact is built from (the DAG's inputs)."""
    return list(dict.fromkeys(path for _, path, _ in BY_KEY[artifact].sources_under(config)))


def evaluation_inputs(artifact_keys: list[str], config: WorkflowConfig) -> list[str]:
    """The evaluation files behind several artifacts, each once."""
    return list(dict.fromkeys(path for key in artifact_keys for path in inputs(key, config)))


def build(artifact: str, config: WorkflowConfig, sources: list[ArtifactSource] | None = None) -> pd.DataFrame:
    """Assemble one artifact's table from its evaluation CSVs (``sources``: some of its sources only, e.g. one row's:
    :mod:`consert.paper.row_targets`)."""
    record = BY_KEY[artifact]
    if record.sources is None:
        raise ValueError(f"{artifact} is not built from evaluations")
    sources = record.sources_under(config) if sources is None else sources
    cache: dict[str, pd.DataFrame] = {}

    def read(path: str) -> pd.DataFrame:
        if path not in cache:
            cache[path] = pd.read_csv(path)
        return cache[path]

    artifacts.check_recorded(record.declared, sources, read)
    return record.build(record.declared, sources, read)


def write_artifact(
    artifact: str,
    config: WorkflowConfig,
    csv_path: str,
    figure_paths: list[str] | None = None,
    published: str | Path | None = None,
) -> None:
    """Build ``artifact``, write its CSV atomically, and draw its figure when it is one; with ``published``
    (``results/published``) the paper's values are drawn on the figure and set beside the table that shows them."""
    from consert.io import write_csv
    from consert.paper.stamp import figure_stamp

    record = BY_KEY[artifact]
    table = build(artifact, config)
    marks = PublishedMarks.load(published) if published else None
    if marks and record.beside is not None:
        table = record.beside(marks, table)
    write_csv(table, csv_path)
    if figure_paths and record.draw is not None:
        record.draw(table, figure_paths, marks, stamp=figure_stamp(inputs(artifact, config)))
