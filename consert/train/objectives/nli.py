"""The NLI objectives: SBERT's classifier over (u, v, ...) features, and ConSERT's joint objective that adds
the contrastive loss over views of the NLI texts."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from consert.data.inputs import ExternalInput, file_input
from consert.data.nli import LABEL_INDEX, SICK_E_LABEL, load_nli
from consert.data.senteval import NliPair, SentEvalData
from consert.train.augment import fgv_perturbation
from consert.train.losses import NliHead
from consert.train.objectives.base import Objective
from consert.train.objectives.contrastive import contrastive_loss
from consert.train.views import (
    PackedPass,
    forward_with_embedding_grad,
    pooled_forward,
    two_view_forward,
    view_forward,
)


class NliClassification(Objective):
    """NLI cross entropy of the classifier over the pair's features (SBERT-NLI; BERT-flow's NLI encoder).
    Its step runs as CUDA graphs where they apply: one packed pass over premises and hypotheses."""

    name, label = "nli", "sup"
    is_contrastive, is_supervised = False, True
    graphs_blocker: str | None = None
    graph_copies = 1  # premises and hypotheses are the pass's rows, each once

    @classmethod
    def inputs(cls, config) -> list[ExternalInput]:
        """The SNLI/MultiNLI files of ``nli_source: snli+mnli`` (SICK-E is read with the STS sets)."""
        return [file_input(path, "nli_files") for path in config.nli_files] if config.nli_source != "sick-e" else []

    def __init__(self, config, encoder, execution):
        super().__init__(config, encoder, execution)
        self.head = NliHead(
            encoder.hidden_size,
            features=config.classifier_features,
            bias=config.classifier_bias,
            init_std=config.classifier_init_std,
        ).to(encoder.device)

    def heads(self) -> list[nn.Module]:
        return [self.head]

    def training_items(self, data: SentEvalData, progress: bool) -> list[NliPair]:
        return load_nli(self.config.nli_source, data, self.config.nli_files)

    def prefill(self, items: list[NliPair], planned_items: int) -> None:
        self.encoder.prefill([text for pair in items for text in (pair.premise, pair.hypothesis)], 2 * planned_items)

    def record(self) -> dict[str, Any]:
        source = self.config.nli_source
        return {"nli": SICK_E_LABEL if source == "sick-e" else source}

    @staticmethod
    def texts_and_labels(batch: list[NliPair]) -> tuple[list[str], torch.Tensor]:
        """The batch's texts (premises, then hypotheses) and its labels' indices, on the host."""
        texts = [p.premise for p in batch] + [p.hypothesis for p in batch]
        return texts, torch.tensor([LABEL_INDEX[p.label] for p in batch])

    def loss(self, batch: list[NliPair]) -> torch.Tensor:
        """The loss of a batch of pairs; with CUDA graphs, a replay that also writes the gradients."""
        return self.rows_loss(*self.texts_and_labels(batch))

    def graphed_loss(
        self, ids: torch.Tensor, mask: torch.Tensor, packed: PackedPass | None, labels: torch.Tensor
    ) -> torch.Tensor:
        """The step's loss of the tokenized pairs on the device (no host reads: graph-safe)."""
        pooled = pooled_forward(self.execution.forward_model, ids, mask, self.encoder.train_pooling, packed=packed)
        return self.pair_loss(pooled, ids, mask, packed, labels)

    def pair_loss(
        self, pooled: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor, packed: PackedPass | None, labels
    ) -> torch.Tensor:
        """The loss given the pairs' pooled vectors (premises, then hypotheses): the classifier's cross entropy."""
        count = len(labels)
        return self.head.loss(pooled[:count], pooled[count:], labels)


class JointNli(NliClassification):
    """The NLI cross entropy plus ``contrastive_weight`` x NT-Xent over two views of all NLI texts.

    With a clean first view (the authors' joint recipe: none + token cutoff) the classifier's forward pass is
    that view, as in the authors' loss; only the augmented view is encoded again, over the same packed rows:
    that step runs as CUDA graphs where they apply. Other views (an adversarial one among them) stay eager.
    """

    name, label = "joint_nli", "joint"
    is_contrastive = True  # NT-Xent beside the NLI cross entropy
    graph_passes = 2  # the classifier's pass, then the second view's over the same rows

    def __init__(self, config, encoder, execution):
        super().__init__(config, encoder, execution)
        self.clean_first = config.views[0] == "none" and "adversarial" not in config.views
        if not self.clean_first:
            self.graphs_blocker = f"joint views {'+'.join(config.views)}: only a clean first view is graphed"
        self.contrastive_loss = contrastive_loss(config)

    def pair_loss(self, pooled, ids, mask, packed, labels) -> torch.Tensor:
        """The cross entropy, plus the contrastive loss of the clean pass against the second view."""
        cross_entropy = super().pair_loss(pooled, ids, mask, packed, labels)
        return cross_entropy + self.contrastive(*self.views(pooled, ids, mask, packed), len(labels))

    def contrastive(self, view1: torch.Tensor, view2: torch.Tensor, count: int) -> torch.Tensor:
        """The contrastive loss (``contrastive_weight`` x NT-Xent) over the premises' views plus over the
        hypotheses'."""
        return self.contrastive_loss(view1, view2, first=count)

    def views(
        self, pooled, ids, mask, packed: PackedPass | None, host_mask=None, perturbation=None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The two views of the texts: with a clean first view, the classifier's pass and the second view over
        the same rows; else both views in one pass over the rows twice (packed from ``host_mask``)."""
        config, encoder, execution = self.config, self.encoder, self.execution
        model, pooling, ratios = execution.forward_model, encoder.train_pooling, encoder.ratios
        if config.views[0] == "none":  # the classifier's clean pass is the first view, as the authors' rep_a
            return pooled, view_forward(model, ids, mask, config.views[1], pooling, ratios, perturbation, packed)
        twice = execution.packed_pass(host_mask, copies=2)
        return two_view_forward(model, ids, mask, config.views, pooling, ratios, perturbation, packed=twice)

    def loss(self, batch: list[NliPair]) -> torch.Tensor:
        if self.clean_first:
            return super().loss(batch)
        return self.two_pass_loss(batch)

    def two_pass_loss(self, batch: list[NliPair]) -> torch.Tensor:
        """Views other than the authors': the classifier's pass (keeping the embedding output an adversarial view
        perturbs, with FGV's perturbation from the cross entropy's gradient), then the views."""
        config, encoder, execution = self.config, self.encoder, self.execution
        texts, labels = self.texts_and_labels(batch)
        tokens = execution.tokenized(texts)
        adversarial = "adversarial" in config.views
        if adversarial:
            pooled, embedded = forward_with_embedding_grad(
                encoder.model, tokens.ids, tokens.mask, encoder.train_pooling, tokens.packed
            )
        else:
            pooled = pooled_forward(
                execution.forward_model, tokens.ids, tokens.mask, encoder.train_pooling, packed=tokens.packed
            )
        cross_entropy = super().pair_loss(pooled, tokens.ids, tokens.mask, tokens.packed, labels.to(encoder.device))
        perturbation = None
        if adversarial:
            (gradient,) = torch.autograd.grad(cross_entropy, embedded, retain_graph=True)
            perturbation = fgv_perturbation(gradient.detach(), config.adversarial_epsilon)
        view1, view2 = self.views(pooled, tokens.ids, tokens.mask, tokens.packed, tokens.host_mask, perturbation)
        return cross_entropy + self.contrastive(view1, view2, len(batch))
