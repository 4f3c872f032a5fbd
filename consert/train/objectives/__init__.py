"""What a training stage optimises, one class per objective (as sentence-transformers' losses): each builds
its training-only heads, says what items it trains on, and computes the loss of a batch of them. A recipe
names its objective (``TrainConfig.objective``); :data:`OBJECTIVES` maps the name to the class the trainer
is handed: every :class:`Objective` with a ``name`` in a module of this package (a new objective is its module
alone)."""

from __future__ import annotations

import importlib
import pkgutil

from consert.configs import ConfigError
from consert.data.inputs import ExternalInput, unique
from consert.train.config import TrainConfig
from consert.train.objectives.augcse import AugCSE
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import Contrastive
from consert.train.objectives.nli import JointNli, NliClassification

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


def _objectives() -> dict[str, type[Objective]]:
    """Every named :class:`Objective` of this package's modules (each module imported), by its name, in name order."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    found: dict[str, type[Objective]] = {}
    classes = list(Objective.__subclasses__())
    while classes:
        cls = classes.pop(0)
        classes += cls.__subclasses__()
        if cls.name and cls.__module__.startswith(f"{__name__}."):
            if found.setdefault(cls.name, cls) is not cls:
                raise ValueError(f"objective name {cls.name!r}: {found[cls.name].__qualname__} and {cls.__qualname__}")
    return dict(sorted(found.items()))


#: Every objective, by the name a recipe gives it.
OBJECTIVES: dict[str, type[Objective]] = _objectives()


def objective_for(config: TrainConfig) -> type[Objective]:
    """The objective ``config.objective`` names; an unknown name is a one-line :class:`ConfigError`."""
    found = OBJECTIVES.get(config.objective)
    if found is None:
        raise ConfigError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {config.objective!r}")
    return found


def check_objective(config: TrainConfig) -> None:
    """``config``'s objective exists and can train on its keys (a two-stage run's first stage too): the first fault
    is a one-line :class:`ConfigError`. The command line, the workflow's start and the trainer call it."""
    for stage in (config.first_stage(), config) if config.two_stage else (config,):
        objective_for(stage).check(stage)


def run_inputs(config: TrainConfig) -> list[ExternalInput]:
    """What the run ``config`` reads beyond the STS sets: its objective's inputs, and its first stage's where it
    trains one (a two-stage mode without ``stage1_model``)."""
    stages = (config.first_stage(), config) if config.two_stage and not config.stage1_model else (config,)
    return unique(item for stage in stages for item in objective_for(stage).inputs(stage))
