"""ConSERT's objectives: NT-Xent as the authors computed it, and the NLI softmax classifier.

The authors' contrastive loss (``AdvCLSoftmaxLoss``) is, for views a and b of N sentences, the
cross entropy of each a_i finding b_i among b and the other a's (cosine / temperature), averaged
over i, PLUS the same with a and b swapped: the sum of the two directional means, which is twice the
mean over all 2N views. Their trainer then multiplies it by ``cl_rate`` (0.15), also when it is the
only loss. In joint training it is computed on the premises and on the hypotheses separately and the
two are added, so a premise never meets its own hypothesis as a negative.

SimCSE's loss (``infonce``) is one-directional and has no in-view negatives: each z1_i must find z2_i
among the N z2's (cosine / temperature), the cross entropy averaged over i (SimCSE ``cl_forward``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from consert.train.augcse_heads import BatchNormProjection


def similarities_in_fp32(tensor: torch.Tensor) -> torch.autocast:
    """Autocast off on ``tensor``'s device: the contrastive similarities in fp32. Autocast would run their matmul in
    bf16 even on fp32 inputs, rounding cosines near 1 to steps of 2**-8 (0.04 in a logit at temperature 0.1);
    SimCSE's stay fp32 under autocast (``cosine_similarity`` is on its fp32 list)."""
    return torch.autocast(tensor.device.type, enabled=False)


def nt_xent(view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
    """Normalized temperature-scaled cross entropy, as the sum of its two directions (the authors').

    Row i of ``view1`` and row i of ``view2`` are two views of one sentence (N x d each). Each of
    the 2N views must find its partner among the 2N - 1 others by cosine similarity / temperature;
    the result is (mean over view1's rows) + (mean over view2's rows) of those cross entropies.
    """
    with similarities_in_fp32(view1):
        views = F.normalize(torch.cat([view1, view2]).float(), dim=1)
        logits = views @ views.T / temperature
    eye = torch.eye(len(views), dtype=torch.bool, device=views.device)
    logits = logits.masked_fill(eye, float("-inf"))
    n = len(view1)
    partners = (torch.arange(2 * n, device=views.device) + n) % (2 * n)  # view i's partner is i +- n
    return 2 * F.cross_entropy(logits, partners)


def infonce(view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
    """SimCSE's InfoNCE: the mean over i of the cross entropy of ``view1[i]`` finding ``view2[i]`` in ``view2``."""
    with similarities_in_fp32(view1):
        logits = F.normalize(view1.float(), dim=1) @ F.normalize(view2.float(), dim=1).T / temperature
    return F.cross_entropy(logits, torch.arange(len(view1), device=logits.device))


def infonce_symmetric(view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
    """AugCSE's ranking loss: the mean of SimCSE's InfoNCE in both directions (still no in-view negatives)."""
    return (infonce(view1, view2, temperature) + infonce(view2, view1, temperature)) / 2


#: The contrastive objectives by name (``TrainConfig.loss``).
CONTRASTIVE_LOSSES = {"nt_xent": nt_xent, "infonce": infonce, "infonce_symmetric": infonce_symmetric}


class TwoViewContrastiveLoss(nn.Module):
    """``weight`` x a contrastive loss of two views (row i of each a view of text i), constructed with its own
    settings as a sentence-transformers loss is: which loss (:data:`CONTRASTIVE_LOSSES`), its temperature (checked
    where it is declared: ``consert.configs.Temperature``) and its weight (ConSERT's ``cl_rate``).

    ``first`` splits the rows: the loss of rows ``[:first]`` plus that of rows ``[first:]``, so that the two groups
    never meet as negatives (ConSERT's joint objective: premises and hypotheses apart)."""

    def __init__(self, kind: str, temperature: float, weight: float = 1.0):
        super().__init__()
        self.kind, self.temperature, self.weight = kind, temperature, weight
        self.function = CONTRASTIVE_LOSSES[kind]

    def forward(self, view1: torch.Tensor, view2: torch.Tensor, first: int | None = None) -> torch.Tensor:
        if first is None:
            return self.weight * self.function(view1, view2, self.temperature)
        parts = ((view1[:first], view2[:first]), (view1[first:], view2[first:]))
        return self.weight * sum(self.function(a, b, self.temperature) for a, b in parts)


class ProjectionHead(nn.Module):
    """SimCSE's training-only head on the pooled [CLS] vector: Linear(d, d) then Tanh, initialised as
    BERT initialises its linear layers (weights N(0, 0.02), zero bias); it is not exported."""

    def __init__(self, dim: int, init_std: float = 0.02):
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        nn.init.normal_(self.dense.weight, std=init_std)
        nn.init.zeros_(self.dense.bias)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(pooled))


#: Training-only projection heads by ``TrainConfig.projection`` (``none``: ConSERT's, no head).
PROJECTION_HEADS = {"mlp": ProjectionHead, "bn_mlp": BatchNormProjection}


#: The classifier's input blocks, by name.
FEATURES = {
    "u": lambda u, v: u,
    "v": lambda u, v: v,
    "abs_diff": lambda u, v: (u - v).abs(),
    "max_square": lambda u, v: torch.maximum(u, v).pow(2),  # the authors' --concatenation_sent_max_square
    "product": lambda u, v: u * v,
}


class NliHead(nn.Module):
    """SBERT's classifier: softmax(W [features]) over entailment, neutral, contradiction.

    ``features`` names the blocks concatenated in order: SBERT and the paper use ``(u, v, abs_diff)``,
    the authors' scripts ``(u, v, abs_diff, max_square)`` with max_square = max(u, v)^2 elementwise.
    """

    def __init__(
        self,
        dim: int,
        num_labels: int = 3,
        features: tuple[str, ...] = ("u", "v", "abs_diff"),
        bias: bool = True,
        init_std: float | None = None,
    ):
        super().__init__()
        unknown = set(features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown classifier features {sorted(unknown)}; choose from {sorted(FEATURES)}")
        self.features = tuple(features)
        self.linear = nn.Linear(len(self.features) * dim, num_labels, bias=bias)
        if init_std is not None:  # TensorFlow's truncated_normal_initializer: redrawn beyond 2 SD
            nn.init.trunc_normal_(self.linear.weight, std=init_std, a=-2 * init_std, b=2 * init_std)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Logits (B x num_labels) for sentence vectors ``u`` and ``v`` (B x d each)."""
        return self.linear(torch.cat([FEATURES[name](u, v) for name in self.features], dim=1).float())

    def loss(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Softmax cross entropy of the classifier against integer ``labels``."""
        return F.cross_entropy(self(u, v), labels)
