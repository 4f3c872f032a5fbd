"""The paper's artifacts' sources (which evaluation CSVs each row comes from) and builders (how a table is assembled
from them); :mod:`consert.paper.catalogue` gives each artifact its own.

The workflow and this module share one set of path conventions (:mod:`consert.planner.paths`), so the DAG's
inputs and the builders' reads cannot drift apart. Every builder reads evaluation CSVs written by
``consert evaluate``/``train --evaluate``/``baseline``/``topk``/``predictions`` and returns a frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from baselines import in_table
from consert import row_labels, sweeps
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
from consert.planner.plan import FLOW_NLI, PlannedRun, RunSpec, plan_runs
from consert.registry import FAMILY, TABLE2, TABLE3, Artifact
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


def planned_sources(config: WorkflowConfig, artifact: str) -> list[ArtifactSource]:
    """The ConSERT runs the plan gives ``artifact``, each row with its labels and seed."""
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
    return sources + planned_sources(config, TABLE2.key) + your_sources(config, TABLE2.key)


def tabled_baseline_sources(config: WorkflowConfig, artifact: str) -> list[ArtifactSource]:
    """The rows of the baselines whose record names ``artifact`` as their table (:func:`baselines.in_table`), one per
    size of the config, each from the workflow's ``eval_baseline`` job."""
    return [
        ({"method": row_labels.baseline(size, spec.label), "size": size}, baseline_eval(size, spec.name), None)
        for spec in in_table(artifact)
        for size in config.models
    ]


def table3_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Supervised table: SBERT-NLI re-impl. (``sup``), joint, sup-unsup, joint-unsup, flow + NLI."""
    sources = planned_sources(config, TABLE3.key)
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
    return sources + planned_sources(config, FAMILY.key) + your_sources(config, FAMILY.key)


def diagnostics_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Every evaluated model: Table 2's and 3's rows, the family's, and every sweep run (named by its axis's
    :attr:`consert.sweeps.SweepAxis.setting`)."""
    sources = table2_sources(config) + table3_sources(config)
    if config.family.methods:
        sources += family_sources(config)
    for planned in plan_runs(config):
        if axis := sweeps.BY_ARTIFACT.get(planned.artifact):
            method = row_labels.consert(planned.spec.size, axis.setting.format(**planned.labels))
            labels = {"method": method, "size": planned.spec.size, "seed": planned.spec.seed}
            sources.append((labels, consert_eval(planned.spec.run_id), None))
    return sources


def topk_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Figure 4: BERT's and ConSERT's curves at the figure's size."""
    size = figure_size(config)
    return [
        ({"model": row_labels.bert(size)}, topk_eval(size, "bert"), None),
        ({"model": row_labels.consert(size)}, topk_eval(size, "consert"), None),
    ]


def prediction_sources(config: WorkflowConfig) -> list[ArtifactSource]:
    """Figure 1: BERT's and ConSERT's predictions at the figure's size."""
    size = figure_size(config)
    return [
        ({"model": row_labels.bert(size)}, predictions_eval(size, "bert"), None),
        ({"model": row_labels.consert(size)}, predictions_eval(size, "consert"), None),
    ]


#: The curves figure's panels: which planned runs each draws (a sweep's: its axis's panel).
CURVE_GROUPS = {
    TABLE2.key: "Table 2",
    FLOW_NLI: "Table 3",
    TABLE3.key: "Table 3",
    FAMILY.key: "contrastive family",
    **{axis.declared.key: axis.panel for axis in sweeps.AXES},
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


# ---- builders: an artifact's table from its sources' evaluation CSVs --------------------------------

#: Reads one evaluation CSV (once per build: a file several sources share is read once).
Reader = Callable[[str], pd.DataFrame]


def _recorded(value: Any) -> Any:
    """A label or an evaluation file's cell as one comparable value: a number as a float, else its text."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def check_recorded(declared: Artifact, sources: list[ArtifactSource], read: Reader) -> None:
    """Each row's labels agree with what its evaluation file records of its run: its seed (where the file records
    one), and a sweep's value (where the file records the axis's training key, as ``temperature``). A file left from
    another run (a stale or copied evaluation) would otherwise join the row the plan names without a fault: a
    one-line :class:`ValueError` naming the file."""
    axis = sweeps.BY_ARTIFACT.get(declared.key)
    for labels, path, _ in sources:
        frame = read(path)
        expected = {"seed": labels.get("seed")}
        value = labels.get(axis.column) if axis is not None else None  # a baseline's row of the table has none
        if value is not None and value != axis.unset:  # a null value is the mode's own, which the label names not
            expected[axis.field] = value
        for column, label in expected.items():
            held = frame[column].dropna().unique() if label is not None and column in frame.columns else []
            if len(held) and {_recorded(cell) for cell in held} != {_recorded(label)}:
                found = ", ".join(str(cell) for cell in held)
                raise ValueError(
                    f"{path}: {column} {found}, but its row of {declared.key} is {column} {label}: the file is "
                    "another run's; remove it and rerun its job"
                )


def score_rows(declared: Artifact, sources: list[ArtifactSource], read: Reader) -> pd.DataFrame:
    """A score table: a row per label set of ``sources``, its scores averaged over seeds, labelled by the
    artifact's ``label_columns`` (its ``extra_columns`` averaged beside them)."""
    entries = []
    for labels, path, pooling in sources:
        frame = read(path)
        entries.append((labels, frame[frame.pooling == pooling] if pooling is not None else frame))
    return tables.score_table(entries, declared.label_columns, declared.extra_columns)


def heatmap_rows(declared: Artifact, sources: list[ArtifactSource], read: Reader) -> pd.DataFrame:
    """Figure 5's score table, each augmentation also by the name the paper prints."""
    table = score_rows(declared, sources, read)
    return table.assign(
        view1_label=table.view1.map(sweeps.AUGMENTATION_LABELS), view2_label=table.view2.map(sweeps.AUGMENTATION_LABELS)
    )


def topk_rows(_: Artifact, sources: list[ArtifactSource], read: Reader) -> pd.DataFrame:
    """Figure 4's curves: each model's Spearman as the most frequent tokens are removed."""
    return tables.topk_table((labels["model"], read(path)) for labels, path, _ in sources)


def prediction_rows(_: Artifact, sources: list[ArtifactSource], read: Reader) -> pd.DataFrame:
    """Figure 1's points: each model's predicted similarity against the gold one, pair by pair."""
    frames = [read(path).assign(model=labels["model"]) for labels, path, _ in sources]
    return pd.concat(frames, ignore_index=True)[["model", "subset", "gold", "cosine", "setting", "sent1", "sent2"]]


def curve_rows(_: Artifact, sources: list[ArtifactSource], read: Reader) -> pd.DataFrame:
    """Every training run's curve, each row with its panel and run."""
    frames = [read(path).assign(group=labels["group"], run=labels["run"]) for labels, path, _ in sources]
    table = pd.concat(frames, ignore_index=True)
    return table[["group", "run", *[c for c in table.columns if c not in ("group", "run")]]]


def diagnostic_rows(_: Artifact, sources: list[ArtifactSource], read: Reader) -> pd.DataFrame:
    """The representation diagnostics of every evaluated model
    (:func:`consert.paper.representation.diagnostics_table`)."""
    from consert.paper.representation import diagnostics_table

    return diagnostics_table(sources, read)
