"""NT-Xent and the NLI head against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from consert.train.losses import NliHead, nt_xent


def test_nt_xent_on_a_2x2_batch_by_hand():
    # two sentences, 2-d views. Normalised: a1=(1,0) a2=(0,1) b1=(1,1)/sqrt2 b2=(1,-1)/sqrt2
    view1 = torch.tensor([[2.0, 0.0], [0.0, 3.0]])
    view2 = torch.tensor([[1.0, 1.0], [1.0, -1.0]])
    tau = 0.5
    s = 1 / math.sqrt(2)
    # cosine rows over the 4 views [a1, a2, b1, b2] with the self-similarity excluded
    sims = {
        "a1": {"a2": 0.0, "b1": s, "b2": s},
        "a2": {"a1": 0.0, "b1": s, "b2": -s},
        "b1": {"a1": s, "a2": s, "b2": 0.0},
        "b2": {"a1": s, "a2": -s, "b1": 0.0},
    }
    partner = {"a1": "b1", "a2": "b2", "b1": "a1", "b2": "a2"}
    terms = []
    for anchor, row in sims.items():
        denominator = sum(math.exp(v / tau) for v in row.values())
        terms.append(-math.log(math.exp(row[partner[anchor]] / tau) / denominator))
    expected = sum(terms) / 2  # the authors' sum of the two directional means (each over 2 anchors)
    assert nt_xent(view1, view2, tau).item() == pytest.approx(expected, rel=1e-6)


def test_nt_xent_is_symmetric_in_the_views():
    torch.manual_seed(0)
    a, b = torch.randn(6, 16), torch.randn(6, 16)
    assert nt_xent(a, b, 0.1).item() == pytest.approx(nt_xent(b, a, 0.1).item(), rel=1e-6)


def test_nt_xent_prefers_aligned_views():
    torch.manual_seed(0)
    a = torch.randn(8, 32)
    assert nt_xent(a, a + 0.01 * torch.randn(8, 32), 0.1) < nt_xent(a, torch.randn(8, 32), 0.1)


def test_nli_head_concatenates_each_feature_block_exactly():
    # with an identity weight the logits ARE the feature vector, so swapping |u - v| for zeros, u - v
    # or u * v, or max(u, v)^2 for anything else, changes them
    head = NliHead(2, num_labels=8, features=("u", "v", "abs_diff", "max_square"))
    with torch.no_grad():
        head.linear.weight.copy_(torch.eye(8))
        head.linear.bias.zero_()
    u, v = torch.tensor([[1.0, 2.0]]), torch.tensor([[4.0, 5.0]])
    # u, v, |u - v| = [3, 3] (u - v = [-3, -3], u * v = [4, 10]), max(u, v)^2 = [16, 25]
    assert head(u, v).tolist() == [[1.0, 2.0, 4.0, 5.0, 3.0, 3.0, 16.0, 25.0]]


def test_nli_head_loss_is_softmax_cross_entropy():
    head = NliHead(2)
    with torch.no_grad():
        head.linear.weight.copy_(torch.eye(3, 6))
        head.linear.bias.zero_()
    u, v = torch.tensor([[1.0, 2.0]]), torch.tensor([[4.0, -1.0]])
    logits = torch.tensor([[1.0, 2.0, 4.0]])  # identity rows pick u1, u2, v1
    expected = -torch.log_softmax(logits, 1)[0, 2]
    assert head.loss(u, v, torch.tensor([2])).item() == pytest.approx(expected.item())
