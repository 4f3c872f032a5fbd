"""The unsupervised contrastive objective of ConSERT and SimCSE: two augmented views of each text."""

from __future__ import annotations

import torch
from torch import nn

from consert.data.inputs import ExternalInput
from consert.data.senteval import SentEvalData
from consert.encode.batching import to_device
from consert.train.config import TrainConfig
from consert.train.corpus import corpus_inputs, training_texts
from consert.train.losses import PROJECTION_HEADS, TwoViewContrastiveLoss
from consert.train.objectives.base import Objective
from consert.train.views import PackedPass, two_view_forward


def projection_head(config: TrainConfig, hidden: int, device: str) -> nn.Module | None:
    """The training-only projection ``config.projection`` names (the contrastive family's heads), or None (ConSERT)."""
    head = PROJECTION_HEADS.get(config.projection)
    return head(hidden).to(device) if head else None


def contrastive_loss(config: TrainConfig) -> TwoViewContrastiveLoss:
    """The contrastive loss ``config`` names, constructed with its settings: ``loss``, ``temperature`` and
    ``contrastive_weight``."""
    return TwoViewContrastiveLoss(config.loss, config.temperature, config.contrastive_weight)


class Contrastive(Objective):
    """A loss of two augmented views of each text (:meth:`loss_module`: ``contrastive_weight`` x ``config.loss``),
    through the projection head when there is one (SimCSE). The one step that CUDA graphs can replay."""

    name = "contrastive"
    graphs_blocker: str | None = None

    @classmethod
    def inputs(cls, config: TrainConfig) -> list[ExternalInput]:
        return corpus_inputs(config)

    def __init__(self, config, encoder, execution):
        super().__init__(config, encoder, execution)
        self.projection = projection_head(config, encoder.hidden_size, encoder.device)
        self.contrastive = self.loss_module(config)

    @classmethod
    def loss_module(cls, config: TrainConfig) -> nn.Module:
        """The loss of the batch's two views (one row per text), constructed with its settings. An objective on
        the same views with another loss overrides this alone (its forward graph-safe: no host reads)."""
        return contrastive_loss(config)

    def heads(self) -> list[nn.Module]:
        return [self.projection] if self.projection is not None else []

    def training_items(self, data: SentEvalData, progress: bool) -> list[str]:
        return training_texts(self.config, data)

    def prefill(self, items: list[str], planned_items: int) -> None:
        self.encoder.prefill(items, planned_items)

    def loss(self, batch: list[str]) -> torch.Tensor:
        """The loss of a batch of texts; with CUDA graphs, a replay that also writes the gradients."""
        encoder, execution = self.encoder, self.execution
        ids, mask = encoder.tokens.batch(batch, encoder.pad_multiple)
        if execution.graphed is not None:
            return execution.graphed(ids, mask)
        packed = execution.packed_pass(mask)
        ids, mask = to_device((ids, mask), encoder.device)
        return self.graphed_loss(ids, mask, packed)

    def graphed_loss(self, ids: torch.Tensor, mask: torch.Tensor, packed: PackedPass | None) -> torch.Tensor:
        """The weighted contrastive loss of a tokenized batch on the device (no host reads: graph-safe)."""
        config, encoder = self.config, self.encoder
        view1, view2 = two_view_forward(
            self.execution.forward_model, ids, mask, config.views, encoder.train_pooling, encoder.ratios, packed=packed
        )
        if self.projection is not None:  # both views in one call: a batch-norm head normalises them together
            view1, view2 = self.projection(torch.cat([view1, view2])).split(len(ids))
        return self.contrastive(view1, view2)
