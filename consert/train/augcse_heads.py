"""AugCSE's additions to SimCSE: the batch-norm projection head, the gradient reversal layer and the
antagonistic augmentation discriminator (Tang et al. 2022; PootieT/AugCSE ``training/discriminator.py``,
``model.py``, ``mlp.py``, ``train_text_classification.py``), written anew.

In the authors' STS recipe (``diff_cse_mode``) each batch row is (original, augmented, original)
through one dropout forward pass; the contrastive loss pairs the two originals (SimCSE's dropout
views), and the discriminator, behind a gradient reversal layer, classifies the augmentation type
from the concatenated (original, augmented) projected embeddings with binary cross entropy against
the one-hot class (one class per augmentation, plus "no augmentation"). The total loss is
``contrastive + discriminator_weight * discriminator``; the reversal makes the encoder work against
the discriminator, so that augmented sentences cannot be told apart by their augmentation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from consert.train.methods import AugCseSettings


class _ReverseGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, multiplier: float) -> torch.Tensor:
        ctx.multiplier = multiplier
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.multiplier * grad, None


def reverse_gradient(x: torch.Tensor, multiplier: float = 1.0) -> torch.Tensor:
    """Identity forward; the gradient times ``-multiplier`` backward (Ganin & Lempitsky's reversal layer)."""
    return _ReverseGradient.apply(x, multiplier)


class BatchNormProjection(nn.Module):
    """AugCSE's (DiffCSE's) training-only head: Linear(d, 2d, no bias), BatchNorm, ReLU,
    Linear(2d, d, no bias), BatchNorm without affine parameters; not exported."""

    def __init__(self, dim: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(dim, 2 * dim, bias=False),
            nn.BatchNorm1d(2 * dim),
            nn.ReLU(),
            nn.Linear(2 * dim, dim, bias=False),
            nn.BatchNorm1d(dim, affine=False),
        )

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.layers(pooled.float())


class AugmentationDiscriminator(nn.Module):
    """The authors' two-layer discriminator on [original; augmented] (2d): dropout (theirs: 0.2,
    :class:`AugCseSettings`) before each linear layer, tanh after each (the last included), 4d hidden units,
    one output per class."""

    def __init__(
        self, dim: int, classes: int, dropout: float = AugCseSettings.model_fields["discriminator_dropout"].default
    ):
        super().__init__()
        self.classes = classes
        self.layers = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(2 * dim, 4 * dim),
            nn.Tanh(),
            nn.Dropout(dropout),
            nn.Linear(4 * dim, classes),
            nn.Tanh(),
        )

    def forward(self, original: torch.Tensor, augmented: torch.Tensor) -> torch.Tensor:
        return self.layers(torch.cat([original, augmented], dim=1).float())


def discriminator_loss(
    discriminator: AugmentationDiscriminator,
    original: torch.Tensor,
    augmented: torch.Tensor,
    labels: torch.Tensor,
    reversal: float = 1.0,
) -> torch.Tensor:
    """BCE-with-logits of the discriminator's outputs against the one-hot augmentation class, with the
    embeddings passed through the gradient reversal layer first (the encoder gets the reversed gradient)."""
    scores = discriminator(reverse_gradient(original, reversal), reverse_gradient(augmented, reversal))
    return F.binary_cross_entropy_with_logits(scores, F.one_hot(labels, discriminator.classes).float())
