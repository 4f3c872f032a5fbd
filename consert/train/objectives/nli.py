"""The NLI objectives: SBERT's classifier over (u, v, ...) features, and ConSERT's joint objective that adds
the contrastive loss over views of the NLI texts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn

from consert.data.nli import LABEL_INDEX, SICK_E_LABEL, load_nli
from consert.data.senteval import NliPair, SentEvalData
from consert.train.augment import fgv_perturbation
from consert.train.config import SUPERVISED_MODES, TrainConfig
from consert.train.losses import NliHead, paired_nt_xent
from consert.train.objectives.base import Objective
from consert.train.views import forward_with_embedding_grad, pooled_forward, two_view_forward, view_forward

if TYPE_CHECKING:
    from consert.train.execution import DeviceBatch


class Classified(NamedTuple):
    """A batch of NLI pairs through the encoder and the classifier."""

    tokens: DeviceBatch
    pooled: torch.Tensor
    cross_entropy: torch.Tensor
    embedded: torch.Tensor | None


class NliClassification(Objective):
    """NLI cross entropy of the classifier over the pair's features (SBERT-NLI; BERT-flow's NLI encoder)."""

    label = "sup"

    def __init__(self, config, encoder, execution):
        super().__init__(config, encoder, execution)
        self.head = NliHead(
            encoder.hidden_size,
            features=config.classifier_features,
            bias=config.classifier_bias,
            init_std=config.classifier_init_std,
        ).to(encoder.device)

    @classmethod
    def trains(cls, config: TrainConfig) -> bool:
        return config.mode in SUPERVISED_MODES

    def heads(self) -> list[nn.Module]:
        return [self.head]

    def training_items(self, data: SentEvalData, progress: bool) -> list[NliPair]:
        return load_nli(self.config.nli_source, data, self.config.nli_files)

    def prefill(self, items: list[NliPair], planned_items: int) -> None:
        self.encoder.prefill([text for pair in items for text in (pair.premise, pair.hypothesis)], 2 * planned_items)

    def record(self) -> dict[str, Any]:
        source = self.config.nli_source
        return {"nli": SICK_E_LABEL if source == "sick-e" else source}

    def classify(self, batch: list[NliPair], with_embedding_grad: bool = False) -> Classified:
        """The tokenized pairs (premises, then hypotheses), their pooled vectors, the cross entropy, and
        (``with_embedding_grad``) the embedding output the adversarial view perturbs."""
        encoder, count = self.encoder, len(batch)
        tokens = self.execution.tokenized([p.premise for p in batch] + [p.hypothesis for p in batch])
        labels = torch.tensor([LABEL_INDEX[p.label] for p in batch], device=encoder.device)
        embedded = None
        if with_embedding_grad:
            pooled, embedded = forward_with_embedding_grad(
                encoder.model, tokens.ids, tokens.mask, encoder.train_pooling, tokens.packed
            )
        else:
            pooled = pooled_forward(
                self.execution.forward_model, tokens.ids, tokens.mask, encoder.train_pooling, packed=tokens.packed
            )
        return Classified(tokens, pooled, self.head.loss(pooled[:count], pooled[count:], labels), embedded)

    def loss(self, batch: list[NliPair]) -> torch.Tensor:
        return self.classify(batch).cross_entropy


class JointNli(NliClassification):
    """The NLI cross entropy plus ``contrastive_weight`` x NT-Xent over two views of all NLI texts.

    With a clean first view (the authors' joint recipe: none + token cutoff) the classifier's forward pass is
    that view, as in the authors' loss; only the augmented view is encoded again.
    """

    label = "joint"

    @classmethod
    def trains(cls, config: TrainConfig) -> bool:
        return config.mode == "joint"

    def loss(self, batch: list[NliPair]) -> torch.Tensor:
        config, encoder, count = self.config, self.encoder, len(batch)
        adversarial = "adversarial" in config.views
        classified = self.classify(batch, with_embedding_grad=adversarial)
        tokens, cross_entropy = classified.tokens, classified.cross_entropy
        perturbation = None
        if adversarial:
            (gradient,) = torch.autograd.grad(cross_entropy, classified.embedded, retain_graph=True)
            perturbation = fgv_perturbation(gradient.detach(), config.adversarial_epsilon)
        model, pooling, ratios = self.execution.forward_model, encoder.train_pooling, encoder.ratios
        first, second = config.views
        if first == "none":  # the classifier's clean pass is the first view, as the authors' rep_a
            view1 = classified.pooled
            view2 = view_forward(model, tokens.ids, tokens.mask, second, pooling, ratios, perturbation, tokens.packed)
        else:
            twice = self.execution.packed_pass(tokens.host_mask, copies=2)
            view1, view2 = two_view_forward(
                model, tokens.ids, tokens.mask, config.views, pooling, ratios, perturbation, packed=twice
            )
        return cross_entropy + config.contrastive_weight * paired_nt_xent(view1, view2, count, config.temperature)
