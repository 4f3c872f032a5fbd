"""What a training stage optimises, one class per objective (as sentence-transformers' losses): each builds
its training-only heads, says what items it trains on, and computes the loss of a batch of them. A recipe
names its objective (``TrainConfig.objective``); :data:`OBJECTIVES` maps the name to the class the trainer
is handed."""

from __future__ import annotations

from consert.configs import ConfigError
from consert.data.inputs import ExternalInput, unique
from consert.train.config import TrainConfig
from consert.train.objectives.augcse import AugCSE
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import Contrastive
from consert.train.objectives.nli import JointNli, NliClassification
from consert.train.recipes import FIRST_STAGE

__all__ = [
    "OBJECTIVES",
    "AugCSE",
    "Contrastive",
    "JointNli",
    "NliClassification",
    "Objective",
    "check_objective",
    "objective_for",
    "run_inputs",
]

#: Every objective, by the name a recipe gives it.
OBJECTIVES: dict[str, type[Objective]] = {
    "contrastive": Contrastive,
    "nli": NliClassification,
    "joint_nli": JointNli,
    "augcse": AugCSE,
}


def objective_for(config: TrainConfig) -> type[Objective]:
    """The objective ``config.objective`` names; an unknown name is a one-line :class:`ConfigError`."""
    found = OBJECTIVES.get(config.objective)
    if found is None:
        raise ConfigError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {config.objective!r}")
    return found


def check_objective(config: TrainConfig) -> None:
    """``config``'s objective exists and can train on its keys (a two-stage run's first stage too): the first fault
    is a one-line :class:`ConfigError`. The command line, the workflow's start and the trainer call it."""
    for stage in (config.first_stage(), config) if config.mode in FIRST_STAGE else (config,):
        objective_for(stage).check(stage)


def run_inputs(config: TrainConfig) -> list[ExternalInput]:
    """What the run ``config`` reads beyond the STS sets: its objective's inputs, and its first stage's where it
    trains one (a two-stage mode without ``stage1_model``)."""
    stages = (config.first_stage(), config) if config.mode in FIRST_STAGE and not config.stage1_model else (config,)
    return unique(item for stage in stages for item in objective_for(stage).inputs(stage))
