"""The paper's artifacts: where their inputs live, and how each table and figure is assembled.

The workflow and this module share one set of path conventions (:mod:`consert.planner.paths`), so the DAG's
inputs and the builders' reads cannot drift apart. Every builder reads evaluation CSVs written by
``consert evaluate``/``train --evaluate``/``baseline``/``topk``/``predictions`` and returns a frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from consert import registry, row_labels
from consert.paper import tables
from consert.planner.paths import (
    baseline_eval,
    consert_eval,
    flow_nli_eval,
    glove_eval,
    predictions_eval,
    run_curve,
    sgopt_eval,
    sgopt_run,
    topk_eval,
    whitening_eval,
    your_eval,
    your_label,
)
from consert.planner.plan import AUGMENTATION_LABELS, FLOW_NLI, PlannedRun, RunSpec, plan_runs
from consert.registry import (
    CURVES,
    DIAGNOSTICS,
    FAMILY,
    FIGURE1,
    FIGURE4,
    FIGURE5,
    FIGURE6,
    FIGURE7,
    TABLE2,
    TABLE3,
    TABLE4,
)
from consert.row_labels import YOURS

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


def figure_size(config: WorkflowConfig) -> str:
    """The model size that Figures 1 and 4 show (the first size with sweeps; the paper: base)."""
    return config.sweeps.sizes[0]


def table2_consert_run(config: WorkflowConfig, size: str) -> str:
    """The run whose model Figures 1 and 4 show as "ConSERT": the first seed's Table 2 run."""
    return RunSpec(size, seed=config.seeds[0]).run_id


# ---- sources: (labels, csv path, pooling filter) per artifact ---------------------------------------

ArtifactSource = tuple[dict[str, Any], str, str | None]


def _planned(config: WorkflowConfig, artifact: str) -> list[PlannedRun]:
    return [p for p in plan_runs(config) if p.artifact == artifact]


def _consert_sources(config: WorkflowConfig, artifact: str) -> list[ArtifactSource]:
    return [({**p.labels, "seed": p.spec.seed}, consert_eval(p.spec.run_id), None) for p in _planned(config, artifact)]


def your_sources(config: WorkflowConfig, artifact: str) -> list[ArtifactSource]:
    """The rows of yours ``artifact``'s table shows: label columns the method, size ``yours`` (a paper size is
    ``base`` or ``large``) and, in Table 3, mode ``yours``."""
    labels = {"size": YOURS, **({"mode": YOURS} if artifact == TABLE3.key else {})}
    models = [model for model in config.yours if artifact in model.tables]
    return [({"method": your_label(model.name), **labels}, your_eval(model.name), None) for model in models]


def table2_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Unsupervised table: BERT poolings, GloVe, whitening, flow, SG-OPT, ConSERT."""
    baselines = config.baselines
    sources: list[ArtifactSource] = [({"method": "Avg. GloVe embeddings", "size": "-"}, glove_eval(), None)]
    for size in config.models:
        for pooling in baselines.poolings:
            sources.append(
                ({"method": row_labels.bert(size, pooling), "size": size}, baseline_eval(size, "poolings"), pooling)
            )
        sources.append(({"method": row_labels.flow(size), "size": size}, baseline_eval(size, "flow"), None))
        for pooling in baselines.whitening_poolings:
            for k in baselines.whitening_k:
                label = row_labels.whitening(size, pooling, k)
                sources.append(({"method": label, "size": size}, whitening_eval(size, pooling, k), None))
        for seed in config.sgopt_seeds:
            sources.append(
                ({"method": row_labels.sgopt(size), "size": size, "seed": seed}, sgopt_eval(size, seed), None)
            )
    return sources + _consert_sources(config, TABLE2.key) + your_sources(config, TABLE2.key)


def table3_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Supervised table: SBERT-NLI re-impl. (``sup``), joint, sup-unsup, joint-unsup, flow + NLI."""
    sources = _consert_sources(config, TABLE3.key)
    for size in config.models:
        for seed in config.seeds:
            base = config.baselines.flow_nli.base
            labels = {"method": row_labels.flow(size, nli=True), "size": size, "mode": f"flow on {base}", "seed": seed}
            sources.append((labels, flow_nli_eval(size, seed), None))
    return sources + your_sources(config, TABLE3.key)


def family_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """The contrastive family: BERT [CLS] and mean (untrained references), ConSERT and the family's methods."""
    sizes = [p.spec.size for p in _planned(config, FAMILY.key)]
    sources: list[ArtifactSource] = []
    for size in dict.fromkeys(sizes):
        for pooling in [p for p in config.baselines.poolings if p in ("cls", "mean")]:
            sources.append(
                ({"method": row_labels.bert(size, pooling), "size": size}, baseline_eval(size, "poolings"), pooling)
            )
    return sources + _consert_sources(config, FAMILY.key) + your_sources(config, FAMILY.key)


def diagnostics_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Every evaluated model: Table 2's and 3's rows, the family's, and every sweep run (named by
    :data:`consert.paper.representation.SWEEP_NAMES`)."""
    from consert.paper.representation import SWEEP_NAMES

    sources = table2_sources(config) + table3_sources(config)
    if config.family.methods:
        sources += family_sources(config)
    for planned in plan_runs(config):
        if planned.artifact in SWEEP_NAMES:
            labels = {"method": SWEEP_NAMES[planned.artifact](planned.labels), "size": planned.spec.size}
            sources.append(({**labels, "seed": planned.spec.seed}, consert_eval(planned.spec.run_id), None))
    return sources


#: The curves figure's panels: which planned runs each draws.
CURVE_GROUPS = {
    TABLE2.key: "Table 2",
    FLOW_NLI: "Table 3",
    TABLE3.key: "Table 3",
    FAMILY.key: "contrastive family",
    TABLE4.key: "Table 4",
    FIGURE5.key: "Figure 5",
    FIGURE6.key: "Figure 6",
    FIGURE7.key: "Figure 7",
}


def curve_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Every training run's curve, labelled with its panel (a run used by two artifacts is in both): the
    planned runs and their NLI first stages, then SG-OPT's runs."""
    sources: list[ArtifactSource] = []
    for planned in plan_runs(config):
        for spec in (planned.spec.stage1, planned.spec):
            if spec is not None:
                sources.append(
                    ({"group": CURVE_GROUPS[planned.artifact], "run": spec.run_id}, run_curve(spec.run_id), None)
                )
    for size in config.models:
        for seed in config.sgopt_seeds:
            sources.append(({"group": "SG-OPT", "run": sgopt_run(size, seed)}, run_curve(sgopt_run(size, seed)), None))
    unique = {(labels["group"], path): (labels, path, pooling) for labels, path, pooling in sources}
    return list(unique.values())


#: Each artifact's sources, by key (every artifact of :data:`consert.registry.ARTIFACTS` built from evaluations).
ARTIFACT_SOURCES: dict[str, Callable[[WorkflowConfig], list[ArtifactSource]]] = {
    TABLE2.key: table2_sources,
    TABLE3.key: table3_sources,
    TABLE4.key: lambda config: _consert_sources(config, TABLE4.key),
    FAMILY.key: family_sources,
    FIGURE5.key: lambda config: _consert_sources(config, FIGURE5.key),
    FIGURE6.key: lambda config: _consert_sources(config, FIGURE6.key),
    FIGURE7.key: lambda config: _consert_sources(config, FIGURE7.key),
    FIGURE4.key: lambda config: [
        ({"model": row_labels.bert(figure_size(config))}, topk_eval(figure_size(config), "bert"), None),
        ({"model": row_labels.consert(figure_size(config))}, topk_eval(figure_size(config), "consert"), None),
    ],
    FIGURE1.key: lambda config: [
        ({"model": row_labels.bert(figure_size(config))}, predictions_eval(figure_size(config), "bert"), None),
        ({"model": row_labels.consert(figure_size(config))}, predictions_eval(figure_size(config), "consert"), None),
    ],
    DIAGNOSTICS.key: diagnostics_sources,
    CURVES.key: curve_sources,
}

#: Each artifact's CSV under the results folder, by key.
CSV_FILES = {artifact.key: artifact.csv for artifact in registry.ARTIFACTS}


def inputs(artifact: str, config: WorkflowConfig) -> list[str]:
    """The evaluation files an artifact is built from (the DAG's inputs)."""
    return list(dict.fromkeys(path for _, path, _ in ARTIFACT_SOURCES[artifact](config)))


def evaluation_inputs(artifact_keys: Iterable[str], config: WorkflowConfig) -> list[str]:
    """The evaluation files behind several artifacts (those built from evaluations), each once."""
    return list(dict.fromkeys(path for key in artifact_keys if key in ARTIFACT_SOURCES for path in inputs(key, config)))


def build(artifact: str, config: WorkflowConfig, sources: list[ArtifactSource] | None = None) -> pd.DataFrame:
    """Assemble one artifact's table from its evaluation CSVs (``sources``: some of its sources only, e.g. one row's:
    :mod:`consert.paper.row_targets`)."""
    sources = ARTIFACT_SOURCES[artifact](config) if sources is None else sources
    cache: dict[str, pd.DataFrame] = {}

    def read(path: str) -> pd.DataFrame:
        if path not in cache:
            cache[path] = pd.read_csv(path)
        return cache[path]

    if artifact == CURVES.key:
        frames = [read(path).assign(group=labels["group"], run=labels["run"]) for labels, path, _ in sources]
        table = pd.concat(frames, ignore_index=True)
        return table[["group", "run", *[c for c in table.columns if c not in ("group", "run")]]]
    if artifact == DIAGNOSTICS.key:
        from consert.paper.representation import diagnostics_table

        return diagnostics_table(sources, read)
    if artifact == FIGURE4.key:
        return tables.topk_table((labels["model"], read(path)) for labels, path, _ in sources)
    if artifact == FIGURE1.key:
        frames = [read(path).assign(model=labels["model"]) for labels, path, _ in sources]
        return pd.concat(frames, ignore_index=True)[["model", "subset", "gold", "cosine", "setting", "sent1", "sent2"]]
    entries = []
    for labels, path, pooling in sources:
        frame = read(path)
        entries.append((labels, frame[frame.pooling == pooling] if pooling is not None else frame))
    declared = registry.BY_KEY[artifact]
    table = tables.score_table(entries, declared.label_columns, declared.extra_columns)
    if artifact == FIGURE5.key:
        table = table.assign(
            view1_label=table.view1.map(AUGMENTATION_LABELS), view2_label=table.view2.map(AUGMENTATION_LABELS)
        )
    return table


def write_artifact(
    artifact: str,
    config: WorkflowConfig,
    csv_path: str,
    figure_paths: list[str] | None = None,
    published: str | Path | None = None,
) -> None:
    """Build ``artifact``, write its CSV atomically, and draw its figure when it is one; with ``published``
    (``results/published``) the paper's values are drawn on the figure and set beside Table 4."""
    from consert.io import write_csv
    from consert.paper.figures import DRAW
    from consert.paper.marks import PublishedMarks
    from consert.paper.stamp import figure_stamp

    table = build(artifact, config)
    marks = PublishedMarks.load(published) if published else None
    if marks and artifact == TABLE4.key:
        table = marks.beside_table4(table)
    write_csv(table, csv_path)
    if figure_paths:
        DRAW[artifact](table, figure_paths, marks, stamp=figure_stamp(inputs(artifact, config)))
