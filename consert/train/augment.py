"""ConSERT's data augmentations, applied at BERT's embedding layer.

Each view of a sentence is produced by one named augmentation:

* ``none``: the identity.
* ``shuffle``: permute the position ids of the real (non-padding) tokens; token ids are unchanged.
* ``token_cutoff``: zero ``int(ratio * n_real)`` whole token rows of the L x d embedding output
  (n_real counts [CLS] and [SEP]; the count rounds down, so 0.1 cuts nothing from fewer than 10 tokens).
* ``feature_cutoff``: zero ``int(ratio * d)`` whole feature columns, the same for every token.
* ``dropout``: zero exactly ``int(ratio * n_real * d)`` elements of the real tokens' rows (the authors'
  count, not ``nn.Dropout``'s independent draws).
* ``adversarial``: add the Fast Gradient Value perturbation ``eps * g / ||g||`` of the supervised
  loss (only with supervision; the trainer computes ``g``).

The cutoffs and dropout are drawn as keep masks (:func:`embedding_scale`) that the trainer's
embedding hook multiplies in (:mod:`consert.train.views`). As in the authors' code, they do not rescale
the kept values, may hit [CLS]/[SEP], and leave the attention mask unchanged. Randomness comes from
the global torch generator, which the trainer seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from consert.train.recipes import COMMON, FALLBACK

#: Augmentations that act on the embedding output (the others act on position ids or need a gradient); each has
#: a rate of the same name among the training keys.
EMBEDDING_AUGMENTATIONS = ("token_cutoff", "feature_cutoff", "dropout")
AUGMENTATIONS = ("none", "shuffle", *EMBEDDING_AUGMENTATIONS, "adversarial")


@dataclass(frozen=True)
class AugmentationRatios:
    """Strengths of the augmentations (defaults: the paper's, from :mod:`consert.train.recipes`)."""

    token_cutoff: float = FALLBACK["token_cutoff"]
    feature_cutoff: float = FALLBACK["feature_cutoff"]
    dropout: float = COMMON["dropout"]
    adversarial_epsilon: float = COMMON["adversarial_epsilon"]


def check_augmentation(name: str) -> str:
    """Return ``name`` if it is a known augmentation, else raise ValueError listing the choices."""
    if name not in AUGMENTATIONS:
        raise ValueError(f"unknown augmentation {name!r}; choose from {AUGMENTATIONS}")
    return name


def _random_order(real: torch.Tensor) -> torch.Tensor:
    """Per row, the indices of the real positions in a uniformly random order, then the padding
    positions in increasing order (B x L); one sort for the whole batch, no per-row loop."""
    length = real.shape[-1]
    keys = torch.rand(real.shape, device=real.device)
    ramp = torch.arange(length, device=real.device, dtype=keys.dtype) / length
    return torch.where(real, keys, 2.0 + ramp).argsort(dim=-1)


def _counts(real: torch.Tensor, ratio: float, per_position: int = 1) -> torch.Tensor:
    """``int(ratio * n_real * per_position)`` per row, computed in float64 as Python's ``int(x * n)``."""
    n_real = real.sum(dim=-1).to(torch.float64)
    return torch.floor(torch.tensor(ratio, dtype=torch.float64) * n_real * per_position).long()


def shuffled_position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids (B x L) that randomly permute the positions of each row's real tokens.

    Padding positions keep their ordinary ids; the permutation is drawn independently per row
    (uniformly: one sort of random keys for the batch).
    """
    real = attention_mask.bool()
    order = _random_order(real)  # real positions shuffled, then padding in order
    slots = (~real).to(torch.int8).argsort(dim=-1, stable=True)  # real positions in order, then padding
    return torch.empty_like(order).scatter_(1, slots, order)


def token_cutoff_keep(attention_mask: torch.Tensor, ratio: float) -> torch.Tensor:
    """B x L x 1 keep mask: ``int(ratio * n_real)`` randomly chosen real-token rows of each sentence zeroed."""
    real = attention_mask.bool()
    rank = _random_order(real).argsort(dim=-1)  # each position's place in its row's random order
    return (rank >= _counts(real, ratio).unsqueeze(1)).unsqueeze(-1).float()


def feature_cutoff_keep(batch: int, dim: int, ratio: float, device) -> torch.Tensor:
    """B x 1 x d keep mask: ``int(ratio * d)`` randomly chosen feature columns of each sentence zeroed."""
    count = int(ratio * dim)
    dropped = torch.rand(batch, dim, device=device).argsort(dim=1)[:, :count]
    return torch.ones(batch, dim, device=device).scatter_(1, dropped, 0).unsqueeze(1)


def element_dropout_keep(attention_mask: torch.Tensor, ratio: float, dim: int) -> torch.Tensor:
    """B x L x d keep mask: ``int(ratio * n_real * d)`` randomly chosen elements of the real-token rows zeroed."""
    batch, length = attention_mask.shape
    real = attention_mask.bool().unsqueeze(-1).expand(batch, length, dim).reshape(batch, length * dim)
    rank = _random_order(real).argsort(dim=-1)
    keep = rank >= _counts(attention_mask.bool(), ratio, dim).unsqueeze(1)
    return keep.reshape(batch, length, dim).float()


def embedding_scale(
    name: str, attention_mask: torch.Tensor, dim: int, ratios: AugmentationRatios
) -> torch.Tensor | None:
    """The keep mask augmentation ``name`` multiplies the embedding output by (broadcastable to B x L x d),
    or None for the views that leave it alone (``none``, ``shuffle``; ``adversarial`` adds instead)."""
    if name == "token_cutoff":
        return token_cutoff_keep(attention_mask, ratios.token_cutoff)
    if name == "feature_cutoff":
        return feature_cutoff_keep(len(attention_mask), dim, ratios.feature_cutoff, attention_mask.device)
    if name == "dropout":
        return element_dropout_keep(attention_mask, ratios.dropout, dim)
    return None


def fgv_perturbation(gradient: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Fast Gradient Value ``epsilon * g / (||g||_2 + 1e-10)``, the norm per token (hidden dim), as the authors."""
    return epsilon * gradient / (gradient.norm(dim=-1, keepdim=True) + 1e-10)
