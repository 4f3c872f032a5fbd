"""AugCSE's objective: the contrastive loss on two dropout passes of each text, and an adversarial
discriminator that must not tell which sentence augmentation made the augmented text."""

from __future__ import annotations

import torch
from torch import nn

from consert.data.senteval import SentEvalData
from consert.train.augcse import AugmentationDiscriminator, discriminator_loss
from consert.train.corpus import training_texts
from consert.train.losses import CONTRASTIVE_LOSSES
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import projection_head
from consert.train.text_augment import AugmentedText, augment_corpus, spacy_pipeline
from consert.train.views import pooled_forward


class AugCSE(Objective):
    """AugCSE (``diff_cse_mode``): (original, augmented, original) in one dropout pass through the encoder and
    the projection; the contrastive loss on the two originals, plus ``discriminator_weight`` x the
    reversed-gradient discriminator's BCE on (original, augmented). Its own settings: ``config.augcse``
    (:class:`consert.train.augcse.AugCseSettings`)."""

    def __init__(self, config, encoder, execution):
        super().__init__(config, encoder, execution)
        hidden, device = encoder.hidden_size, encoder.device
        self.projection = projection_head(config, hidden, device)
        classes = len(config.augcse.text_augmentations) + 1  # each augmentation, and "no augmentation"
        self.discriminator = AugmentationDiscriminator(hidden, classes=classes).to(device)

    def heads(self) -> list[nn.Module]:
        return [head for head in (self.projection, self.discriminator) if head is not None]

    def training_items(self, data: SentEvalData, progress: bool) -> list[AugmentedText]:
        config, settings = self.config, self.config.augcse
        items, self.augmentation_rates = augment_corpus(
            training_texts(config, data), settings.text_augmentations, config.seed,
            spacy_pipeline(settings.spacy_model), progress,
        )  # fmt: skip
        return items

    def loss(self, batch: list[AugmentedText]) -> torch.Tensor:
        config, encoder, count = self.config, self.encoder, len(batch)
        texts = [item.text for item in batch]
        tokens = self.execution.tokenized(texts + [item.augmented for item in batch] + texts)
        pooled = pooled_forward(
            self.execution.forward_model, tokens.ids, tokens.mask, encoder.train_pooling, packed=tokens.packed
        )
        projected = self.projection(pooled) if self.projection is not None else pooled
        anchor, augmented, positive = projected.split(count)
        contrastive = CONTRASTIVE_LOSSES[config.loss](anchor, positive, config.temperature)
        labels = torch.tensor([item.label for item in batch], device=encoder.device)
        return config.contrastive_weight * contrastive + config.augcse.discriminator_weight * discriminator_loss(
            self.discriminator, anchor, augmented, labels
        )
