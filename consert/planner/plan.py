"""Which ConSERT training runs each paper artifact needs, derived from the workflow config.

A run is identified by what differs from the config's training defaults, so an experiment that
several artifacts share (the Table 2 run is also the Shuffle + Feature Cutoff cell of Figure 5, the
tau = 0.1 point of Figure 7 and the "all texts" point of Figure 6) is trained once. Two-stage
settings (sup-unsup, joint-unsup) start from the checkpoint of the matching one-stage NLI run,
which is itself the Table 3 ``sup``/``joint`` run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from consert import registry, row_labels
from consert.train.modes import FLOW_NLI_BLOCK, METHOD_KEYS_BLOCK, MODES, published_in, stage_defaults
from consert.train.recipes import COMMON

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

AUGMENTATION_LABELS = {
    "none": "None",
    "shuffle": "Shuffle",
    "token_cutoff": "Token Cutoff",
    "feature_cutoff": "Feature Cutoff",
    "dropout": "Dropout",
}


@dataclass(frozen=True)
class RunSpec:
    """One training run: model size, mode (what it trains), and what differs from the mode's defaults."""

    size: str
    mode: str = "unsup"  # a ConSERT stage, a method of the contrastive family, or bertflow-nli (TrainConfig.mode)
    views: tuple[str, str] | None = None
    temperature: float | None = None
    batch_size: int | None = None
    n_texts: int | None = None
    seed: int = 1

    @property
    def run_id(self) -> str:
        """A readable, unique name: ``base-unsup-seed1``, ``base-unsup-none+dropout-seed1``, ..."""
        parts = [self.size, self.mode]
        if self.views is not None:
            parts.append("+".join(self.views))
        if self.temperature is not None:
            parts.append(f"tau{self.temperature:g}")
        if self.batch_size is not None:
            parts.append(f"bs{self.batch_size}")
        if self.n_texts is not None:
            parts.append(f"n{self.n_texts}")
        parts.append(f"seed{self.seed}")
        return "-".join(parts)

    @property
    def stage1(self) -> RunSpec | None:
        """The NLI run a two-stage mode starts from (None for one-stage modes)."""
        first = MODES[self.mode].first_stage
        return None if first is None else RunSpec(self.size, first, seed=self.seed)


@dataclass(frozen=True)
class PlannedRun:
    """A run as one artifact uses it: which artifact, the labels of its row or cell, the run."""

    artifact: str
    labels: dict[str, Any] = field(hash=False)
    spec: RunSpec


def _normalise(spec: RunSpec, config: WorkflowConfig) -> RunSpec:
    """Drop overrides equal to the unsupervised stage's values so identical experiments get identical ids."""
    defaults = {**COMMON, **stage_defaults("unsup"), **config.stage_keys("unsup", spec.size)}
    changes: dict[str, Any] = {}
    if spec.views is not None and tuple(spec.views) == tuple(defaults["views"]):
        changes["views"] = None
    if spec.temperature is not None and spec.temperature == defaults["temperature"]:
        changes["temperature"] = None
    if spec.batch_size is not None and spec.batch_size == defaults["batch_size"]:
        changes["batch_size"] = None
    return replace(spec, **changes)


#: The planned runs BERT-flow (NLI) fits its flow on: a panel of the training curves, not an artifact.
FLOW_NLI = "flow_nli"


def flow_nli_run(config: WorkflowConfig, size: str, seed: int) -> RunSpec:
    """The training run whose model Table 3's BERT-flow (NLI) row of ``size`` fits its flow on."""
    return RunSpec(size, "bertflow-nli" if config.baselines.flow_nli.base == "li" else "sup", seed=seed)


def plan_runs(config: WorkflowConfig) -> list[PlannedRun]:
    """Every (artifact, labels, run) the config asks for; ``unique_runs`` dedups them."""
    sweeps, family = config.sweeps, config.family
    planned: list[PlannedRun] = []

    def add(artifact: str, labels: dict[str, Any], spec: RunSpec) -> None:
        planned.append(PlannedRun(artifact, labels, _normalise(spec, config)))

    def seeded(method: str, seed: int) -> bool:  # a row's own seeds (row_seeds), else the config's
        return seed in config.row_seeds.get(method, config.seeds)

    for seed in dict.fromkeys([*config.seeds, *(s for seeds in config.row_seeds.values() for s in seeds)]):
        for size in config.models:
            if seeded(row_labels.consert(size), seed):
                add(registry.TABLE2.key, {"method": row_labels.consert(size), "size": size}, RunSpec(size, seed=seed))
            if seed in config.seeds:
                add(FLOW_NLI, {"size": size}, flow_nli_run(config, size, seed))
            for mode in published_in(registry.TABLE3.key):
                method = row_labels.consert(size, mode)
                if seeded(method, seed):
                    labels = {"method": method, "size": size, "mode": mode}
                    add(registry.TABLE3.key, labels, RunSpec(size, mode, seed=seed))
        for size in family.sizes if family.methods else []:
            if seeded(row_labels.consert(size), seed):  # Table 2's run again
                add(registry.FAMILY.key, {"method": row_labels.consert(size), "size": size}, RunSpec(size, seed=seed))
            for method in family.methods:
                label = row_labels.method(MODES[method].label, size)
                if seeded(label, seed):
                    add(registry.FAMILY.key, {"method": label, "size": size}, RunSpec(size, method, seed=seed))
    for seed in config.sweep_seeds:
        for size in sweeps.sizes:
            for batch_size in sweeps.batch_sizes:
                labels = {"size": size, "batch_size": batch_size}
                add(registry.TABLE4.key, labels, RunSpec(size, batch_size=batch_size, seed=seed))
            for first, second, views in heatmap_cells(sweeps.augmentations, sweeps.heatmap):
                add(
                    registry.FIGURE5.key,
                    {"size": size, "view1": first, "view2": second, "trained_as": "+".join(views)},
                    RunSpec(size, views=views, seed=seed),
                )
            for n in sweeps.few_shot:
                for mode in ("unsup", "joint-unsup"):
                    add(
                        registry.FIGURE6.key,
                        {"size": size, "mode": mode, "n_texts": n or "all"},
                        RunSpec(size, mode, n_texts=n, seed=seed),
                    )
            for tau in sweeps.temperatures:
                add(registry.FIGURE7.key, {"size": size, "temperature": tau}, RunSpec(size, temperature=tau, seed=seed))
    return planned


def heatmap_cells(augmentations: list[str], mode: str = "ordered") -> list[tuple[str, str, tuple[str, str]]]:
    """Figure 5's cells as ``(view1, view2, views trained)``.

    ``ordered`` trains every ordered pair (the paper's 5 x 5). ``unordered`` trains each pair once,
    (A, B) with A first in ``augmentations``, and shows that run in the (B, A) cell as well: NT-Xent
    treats its two views alike, so the two cells differ only by the random draw. It is the offline
    config's way to a full matrix with fewer runs; ``trained_as`` tells the cells apart.
    """
    if mode not in ("ordered", "unordered"):
        raise ValueError(f"sweeps.heatmap: expected 'ordered' or 'unordered', got {mode!r}")
    cells = []
    for i, first in enumerate(augmentations):
        for j, second in enumerate(augmentations):
            mirrored = mode == "unordered" and j < i
            cells.append((first, second, (second, first) if mirrored else (first, second)))
    return cells


def unique_runs(planned: list[PlannedRun]) -> dict[str, RunSpec]:
    """``{run_id: spec}`` of every run needed, stage-1 NLI runs included."""
    runs: dict[str, RunSpec] = {}
    for item in planned:
        for spec in (item.spec.stage1, item.spec):
            if spec is not None:
                runs.setdefault(spec.run_id, spec)
    return runs


def train_overrides(spec: RunSpec, config: WorkflowConfig, runs_dir: str = "runs") -> dict[str, Any]:
    """The ``TrainConfig`` values of one run: the config's ``train`` keys, its stage's block, the run's own.

    The stage's recipe itself is ``TrainConfig``'s default for the run's mode (the authors' values);
    a two-stage setting's run is its second stage, started from its NLI run's exported model.
    """
    nli_source, nli_files = config.nli.source, config.nli.files
    values: dict[str, Any] = {"dtype": config.dtype}
    block = MODES[spec.mode].workflow_block  # where the config's keys of this mode's runs are
    if block == METHOD_KEYS_BLOCK:  # the family's own recipe: ConSERT's `train` block does not apply
        values |= {"train_texts": config.family.train_texts, **config.family.method_keys(spec.mode)}
    elif block == FLOW_NLI_BLOCK:  # BERT-flow's NLI encoder: its authors' recipe, its own data
        flow_nli = config.baselines.flow_nli
        values |= flow_nli.train
        if flow_nli.files:
            nli_source, nli_files = "snli+mnli", flow_nli.files
    else:
        values |= config.stage_keys(spec.mode, spec.size)
    values.update(
        model=config.models[spec.size],
        mode=spec.mode,
        seed=spec.seed,
        data=config.data_dir,
        nli_source=nli_source,
        nli_files=list(nli_files),
    )
    if spec.stage1 is not None:
        values["stage1_model"] = f"{runs_dir}/{spec.stage1.run_id}/model"
    if spec.views is not None:
        values["views"] = list(spec.views)
    if spec.temperature is not None:
        values["temperature"] = spec.temperature
    if spec.batch_size is not None:
        values["batch_size"] = spec.batch_size
    if spec.n_texts is not None:
        values["n_texts"] = spec.n_texts
    return values
