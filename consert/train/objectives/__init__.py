"""What a training stage optimises, one class per objective (as sentence-transformers' losses): each builds
its training-only heads, says what items it trains on, and computes the loss of a batch of them. The trainer
is handed one by :func:`objective_for`."""

from __future__ import annotations

from consert.train.config import TrainConfig
from consert.train.objectives.augcse import AugCSE
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import Contrastive
from consert.train.objectives.nli import JointNli, NliClassification

__all__ = ["AugCSE", "Contrastive", "JointNli", "NliClassification", "Objective", "objective_for"]


def objective_for(config: TrainConfig) -> type[Objective]:
    """The objective of one stage of ``config.mode``: the first match of the objectives' own rules, in order."""
    for objective in (JointNli, NliClassification, AugCSE, Contrastive):
        if objective.trains(config):
            return objective
    raise ValueError(f"no objective trains mode {config.mode!r}")
