"""ConSERT's objectives: NT-Xent over 2N views and the NLI softmax classifier on (u, v, |u - v|)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def nt_xent(view1: torch.Tensor, view2: torch.Tensor, temperature: float) -> torch.Tensor:
    """Normalized temperature-scaled cross entropy over the 2N views of a batch.

    Row i of ``view1`` and row i of ``view2`` are two views of one sentence (N x d each). Each of
    the 2N views must find its partner among the 2N - 1 others by cosine similarity / temperature;
    the result is the mean of the 2N cross-entropy terms.
    """
    views = F.normalize(torch.cat([view1, view2]).float(), dim=1)
    logits = views @ views.T / temperature
    eye = torch.eye(len(views), dtype=torch.bool, device=views.device)
    logits = logits.masked_fill(eye, float("-inf"))
    n = len(view1)
    partners = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(views.device)
    return F.cross_entropy(logits, partners)


class NliHead(nn.Module):
    """SBERT's classifier: softmax(W [u; v; |u - v|]) over entailment, neutral, contradiction."""

    def __init__(self, dim: int, num_labels: int = 3):
        super().__init__()
        self.linear = nn.Linear(3 * dim, num_labels)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Logits (B x num_labels) for sentence vectors ``u`` and ``v`` (B x d each)."""
        return self.linear(torch.cat([u, v, (u - v).abs()], dim=1).float())

    def loss(self, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Softmax cross entropy of the classifier against integer ``labels``."""
        return F.cross_entropy(self(u, v), labels)
