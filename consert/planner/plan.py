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

from consert import registry, row_labels, sweeps
from consert.train.modes import FLOW_NLI_BLOCK, METHOD_KEYS_BLOCK, MODES, published_in, stage_defaults
from consert.train.recipes import COMMON

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


@dataclass(frozen=True)
class RunSpec:
    """One training run: model size, mode (what it trains), the training keys its sweep sets, and its seed.

    ``overrides`` are ``(training key, value)`` pairs, each the key of a sweep axis (:data:`consert.sweeps.AXES`),
    its value checked by the axis's type when the config was read; they differ from the mode's defaults.
    """

    size: str
    mode: str = "unsup"  # a ConSERT stage, a method of the contrastive family, or bertflow-nli (TrainConfig.mode)
    overrides: tuple[tuple[str, Any], ...] = ()
    seed: int = 1

    @property
    def run_id(self) -> str:
        """A readable, unique name: ``base-unsup-seed1``, ``base-unsup-none+dropout-seed1``,
        ``base-unsup-tau0.05-seed1`` (each override written by its axis's tag)."""
        tags = [sweeps.BY_FIELD[key].tag.format(value) for key, value in self.overrides]
        return "-".join([self.size, self.mode, *tags, f"seed{self.seed}"])

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

    def same(value: Any, default: Any) -> bool:  # a config's list (views) equals the run's tuple
        return (tuple(value) if isinstance(value, list | tuple) else value) == (
            tuple(default) if isinstance(default, list | tuple) else default
        )

    kept = tuple((key, value) for key, value in spec.overrides if not same(value, defaults.get(key)))
    return replace(spec, overrides=kept)


#: The planned runs BERT-flow (NLI) fits its flow on: a panel of the training curves, not an artifact.
FLOW_NLI = "flow_nli"


def flow_nli_run(config: WorkflowConfig, size: str, seed: int) -> RunSpec:
    """The training run whose model Table 3's BERT-flow (NLI) row of ``size`` fits its flow on."""
    return RunSpec(size, "bertflow-nli" if config.baselines.flow_nli.base == "li" else "sup", seed=seed)


def plan_runs(config: WorkflowConfig) -> list[PlannedRun]:
    """Every (artifact, labels, run) the config asks for; ``unique_runs`` dedups them."""
    family = config.family
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
        for size in config.sweeps.sizes:
            for axis in sweeps.AXES:
                for mode, labels, value in axis.points(getattr(config.sweeps, axis.key), config.sweeps.heatmap):
                    spec = RunSpec(size, mode, axis.override(value), seed)
                    add(axis.declared.key, {"size": size, **labels}, spec)
    return planned


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
    for key, value in spec.overrides:  # the run's sweep, as the training config takes it (views: a list)
        values[key] = list(value) if isinstance(value, tuple) else value
    return values
