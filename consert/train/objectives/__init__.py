"""What a training stage optimises, one class per objective (as sentence-transformers' losses): each builds
its training-only heads, says what items it trains on, and computes the loss of a batch of them. A recipe
names its objective (``TrainConfig.objective``); :data:`OBJECTIVES` maps the name to the class the trainer
is handed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consert.train.objectives.augcse import AugCSE
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import Contrastive
from consert.train.objectives.nli import JointNli, NliClassification

if TYPE_CHECKING:  # the config imports OBJECTIVES (its checks ask what an objective is): no import back
    from consert.train.config import TrainConfig

__all__ = ["OBJECTIVES", "AugCSE", "Contrastive", "JointNli", "NliClassification", "Objective", "objective_for"]

#: Every objective, by the name a recipe gives it.
OBJECTIVES: dict[str, type[Objective]] = {
    "contrastive": Contrastive,
    "nli": NliClassification,
    "joint_nli": JointNli,
    "augcse": AugCSE,
}


def objective_for(config: TrainConfig) -> type[Objective]:
    """The objective ``config.objective`` names (the config's checks refused any other name)."""
    return OBJECTIVES[config.objective]
