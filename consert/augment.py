"""ConSERT's data augmentations, applied at BERT's embedding layer.

Each view of a sentence is produced by one named augmentation:

* ``none``: the identity.
* ``shuffle``: permute the position ids of the real (non-padding) tokens; token ids are unchanged.
* ``token_cutoff``: zero ``round(ratio * n_real)`` whole token rows of the L x d embedding output.
* ``feature_cutoff``: zero ``int(ratio * d)`` whole feature columns, the same for every token.
* ``dropout``: zero individual elements of the embedding output with probability ``ratio``.
* ``adversarial``: add the Fast Gradient Value perturbation ``eps * g / ||g||`` of the supervised
  loss (only with supervision; the trainer computes ``g``).

As in the authors' code, cutoff and dropout do not rescale the kept values and may hit [CLS]/[SEP].
Randomness comes from the global torch generator, which the trainer seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

AUGMENTATIONS = ("none", "shuffle", "token_cutoff", "feature_cutoff", "dropout", "adversarial")
#: Augmentations that act on the embedding output (the others act on position ids or need a gradient).
EMBEDDING_AUGMENTATIONS = ("token_cutoff", "feature_cutoff", "dropout")


@dataclass(frozen=True)
class AugmentationRatios:
    """Strengths of the augmentations (paper defaults)."""

    token_cutoff: float = 0.15
    feature_cutoff: float = 0.2
    dropout: float = 0.2
    adversarial_epsilon: float = 1.0


def check_augmentation(name: str) -> str:
    """Return ``name`` if it is a known augmentation, else raise ValueError listing the choices."""
    if name not in AUGMENTATIONS:
        raise ValueError(f"unknown augmentation {name!r}; choose from {AUGMENTATIONS}")
    return name


def shuffled_position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids (B x L) that randomly permute the positions of each row's real tokens.

    Padding positions keep their ordinary ids; the permutation is drawn independently per row.
    """
    batch, length = attention_mask.shape
    positions = torch.arange(length, device=attention_mask.device).expand(batch, length).clone()
    for row in range(batch):
        real = attention_mask[row].nonzero(as_tuple=True)[0]
        positions[row, real] = real[torch.randperm(len(real), device=real.device)]
    return positions


def token_cutoff(embeddings: torch.Tensor, attention_mask: torch.Tensor, ratio: float) -> torch.Tensor:
    """Zero ``int(ratio * n_real)`` randomly chosen real-token rows of each sentence ([CLS]/[SEP] included).

    As the authors: n_real counts the special tokens, the count rounds down (ratio 0.1 cuts nothing
    from a sentence of fewer than 10 tokens), no rescaling, and the attention mask is unchanged.
    """
    keep = torch.ones(embeddings.shape[:2], dtype=embeddings.dtype, device=embeddings.device)
    for row in range(embeddings.shape[0]):
        real = attention_mask[row].nonzero(as_tuple=True)[0]
        count = int(ratio * len(real))
        keep[row, real[torch.randperm(len(real), device=real.device)[:count]]] = 0
    return embeddings * keep.unsqueeze(-1)


def feature_cutoff(embeddings: torch.Tensor, ratio: float) -> torch.Tensor:
    """Zero ``int(ratio * d)`` randomly chosen feature columns of each sentence (all its tokens)."""
    batch, _, dim = embeddings.shape
    count = int(ratio * dim)
    scores = torch.rand(batch, dim, device=embeddings.device)
    dropped = scores.argsort(dim=1)[:, :count]
    keep = torch.ones(batch, dim, dtype=embeddings.dtype, device=embeddings.device)
    keep.scatter_(1, dropped, 0)
    return embeddings * keep.unsqueeze(1)


def element_dropout(embeddings: torch.Tensor, attention_mask: torch.Tensor, ratio: float) -> torch.Tensor:
    """Zero ``int(ratio * n_real * d)`` randomly chosen elements of each sentence's real-token rows.

    The authors' "dropout" augmentation: an exact count drawn among the real tokens' elements, no
    rescaling (it is not ``nn.Dropout``).
    """
    batch, _, dim = embeddings.shape
    keep = torch.ones_like(embeddings)
    for row in range(batch):
        real = attention_mask[row].nonzero(as_tuple=True)[0]
        count = int(ratio * len(real) * dim)
        flat = torch.randperm(len(real) * dim, device=embeddings.device)[:count]
        keep[row, real[flat // dim], flat % dim] = 0
    return embeddings * keep


def fgv_perturbation(gradient: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Fast Gradient Value ``epsilon * g / (||g||_2 + 1e-10)``, the norm per token (hidden dim), as the authors."""
    return epsilon * gradient / (gradient.norm(dim=-1, keepdim=True) + 1e-10)


def augment_embeddings(
    name: str,
    embeddings: torch.Tensor,
    attention_mask: torch.Tensor,
    ratios: AugmentationRatios,
    perturbation: torch.Tensor | None = None,
) -> torch.Tensor:
    """Apply augmentation ``name`` to an embedding output (B x L x d); ``shuffle``/``none`` pass through."""
    if name == "token_cutoff":
        return token_cutoff(embeddings, attention_mask, ratios.token_cutoff)
    if name == "feature_cutoff":
        return feature_cutoff(embeddings, ratios.feature_cutoff)
    if name == "dropout":
        return element_dropout(embeddings, attention_mask, ratios.dropout)
    if name == "adversarial":
        if perturbation is None:
            raise ValueError("the adversarial augmentation needs a supervised loss (modes joint/joint-unsup)")
        return embeddings + perturbation
    return embeddings
