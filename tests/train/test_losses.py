"""NT-Xent and the NLI head against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from consert.train.losses import CONTRASTIVE_LOSSES, NliHead, nt_xent


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


def near_views(rows: int = 8, dim: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Two bf16 views of ``rows`` sentences (a bf16 encoder's outputs) whose cosines lie near 1, as BERT's do: about
    0.99 between a sentence's views, 0.9 between sentences."""
    generator = torch.Generator().manual_seed(0)
    anchor = torch.randn(1, dim, generator=generator) + 0.3 * torch.randn(rows, dim, generator=generator)
    return tuple((anchor + 0.05 * torch.randn(rows, dim, generator=generator)).bfloat16() for _ in range(2))


#: Autocast's device types: the CPU's, and CUDA's where a GPU is (its autocast is another implementation).
AUTOCAST_DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")]),
]


@pytest.mark.parametrize("device", AUTOCAST_DEVICES)
@pytest.mark.parametrize("name", sorted(CONTRASTIVE_LOSSES))
def test_the_similarities_stay_fp32_under_bf16_autocast(name, device):
    """Autocast runs a matmul in bf16 even on fp32 inputs: cosines near 1 would round to steps of 2**-8, 0.08 in
    the logits at temperature 0.05. SimCSE's similarities are fp32 under autocast (``cosine_similarity`` is on
    its fp32 list), and so are these: the loss under bf16 autocast equals the loss of the same views without it."""
    view1, view2 = (view.to(device) for view in near_views())
    loss = CONTRASTIVE_LOSSES[name]
    with torch.autocast(device, dtype=torch.bfloat16):
        under_autocast = loss(view1, view2, 0.05)
    assert under_autocast.dtype == torch.float32
    assert under_autocast.item() == pytest.approx(loss(view1, view2, 0.05).item(), rel=1e-6)


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
