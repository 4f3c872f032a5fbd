"""AugCSE's objective: the contrastive loss on two dropout passes of each text, and an adversarial
discriminator that must not tell which sentence augmentation made the augmented text."""

from __future__ import annotations

import torch
from torch import nn

from consert.data.inputs import ExternalInput
from consert.data.senteval import SentEvalData
from consert.train.augcse_heads import AugmentationDiscriminator, discriminator_loss
from consert.train.corpus import corpus_inputs, training_texts
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import contrastive_loss, projection_head
from consert.train.text_augment import AugmentedText, augment_corpus, augmentation_inputs, spacy_pipeline
from consert.train.views import PackedPass, pooled_forward


class AugCSE(Objective):
    """AugCSE (``diff_cse_mode``): (original, augmented, original) in one dropout pass through the encoder and
    the projection; the contrastive loss on the two originals, plus ``discriminator_weight`` x the
    reversed-gradient discriminator's BCE on (original, augmented). Its own settings: ``config.augcse``
    (:class:`consert.train.methods.AugCseSettings`).

    Its step is graph-safe: one packed pass over the 3B rows, the labels a further static input (its graphed step
    equals its eager packed one in loss and gradients: ``tests/train/test_graphs.py``, a CUDA test)."""

    name = "augcse"
    graphs_blocker: str | None = None
    graph_copies = 1  # the (original, augmented, original) rows are the pass's rows, each once

    @classmethod
    def inputs(cls, config) -> list[ExternalInput]:
        """The corpus file, and what the text augmentations read: a spaCy pipeline, WordNet 3.0."""
        settings = config.augcse
        return corpus_inputs(config) + augmentation_inputs(
            settings.text_augmentations, settings.spacy_model, settings.wordnet
        )

    def __init__(self, config, encoder, execution):
        super().__init__(config, encoder, execution)
        hidden, device = encoder.hidden_size, encoder.device
        self.projection = projection_head(config, hidden, device)
        self.contrastive, self.settings = contrastive_loss(config), config.augcse
        classes = len(config.augcse.text_augmentations) + 1  # each augmentation, and "no augmentation"
        self.discriminator = AugmentationDiscriminator(
            hidden, classes=classes, dropout=config.augcse.discriminator_dropout
        ).to(device)

    def heads(self) -> list[nn.Module]:
        return [head for head in (self.projection, self.discriminator) if head is not None]

    def training_items(self, data: SentEvalData, progress: bool) -> list[AugmentedText]:
        config, settings = self.config, self.config.augcse
        items, self.augmentation_rates = augment_corpus(
            training_texts(config, data), settings.text_augmentations, config.seed,
            spacy_pipeline(settings.spacy_model), progress, settings.wordnet,
        )  # fmt: skip
        return items

    def loss(self, batch: list[AugmentedText]) -> torch.Tensor:
        """The loss of a batch; with CUDA graphs, a replay that also writes the gradients."""
        texts = [item.text for item in batch]
        rows = texts + [item.augmented for item in batch] + texts  # the authors' (original, augmented, original)
        return self.rows_loss(rows, torch.tensor([item.label for item in batch]))

    def graphed_loss(
        self, ids: torch.Tensor, mask: torch.Tensor, packed: PackedPass | None, labels: torch.Tensor
    ) -> torch.Tensor:
        """The step's loss of the tokenized (original, augmented, original) rows on the device (no host reads:
        graph-safe; ``F.one_hot`` with its class count given does not read the labels back on CUDA)."""
        encoder = self.encoder
        pooled = pooled_forward(self.execution.forward_model, ids, mask, encoder.train_pooling, packed=packed)
        projected = self.projection(pooled) if self.projection is not None else pooled
        anchor, augmented, positive = projected.split(len(labels))
        contrastive = self.contrastive(anchor, positive)  # first: the gradients' summation order (byte-identical runs)
        return contrastive + self.settings.discriminator_weight * discriminator_loss(
            self.discriminator, anchor, augmented, labels
        )
