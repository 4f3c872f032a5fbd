"""Each augmentation does exactly what the paper and SPEC §1 define."""

from __future__ import annotations

import pytest
import torch

from consert.augment import (
    AugmentationRatios,
    augment_embeddings,
    element_dropout,
    feature_cutoff,
    fgv_perturbation,
    shuffled_position_ids,
    token_cutoff,
)

MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]])


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_shuffle_permutes_real_positions_only():
    for _ in range(20):
        positions = shuffled_position_ids(MASK)
        for row, mask in zip(positions, MASK, strict=True):
            n_real = int(mask.sum())
            assert sorted(row[:n_real].tolist()) == list(range(n_real))  # a permutation of the real ids
            assert row[n_real:].tolist() == list(range(n_real, len(mask)))  # padding untouched
    changed = any(not torch.equal(shuffled_position_ids(MASK)[1], torch.arange(10)) for _ in range(5))
    assert changed


def test_shuffle_view_keeps_token_ids(monkeypatch):
    """The two-view forward shuffles positions, never token ids."""
    from consert import views

    seen = {}

    def fake_forward(model, input_ids, attention_mask, pooling, position_ids=None):
        seen["ids"], seen["positions"] = input_ids, position_ids
        return torch.zeros(len(input_ids), 2)

    monkeypatch.setattr(views, "pooled_forward", fake_forward)
    monkeypatch.setattr(views, "edited_embeddings", lambda model, edit: __import__("contextlib").nullcontext())
    ids = torch.randint(5, 100, MASK.shape) * MASK
    views.two_view_forward(None, ids, MASK, ("shuffle", "none"), None, AugmentationRatios())
    assert torch.equal(seen["ids"], ids.repeat(2, 1))
    assert torch.equal(seen["positions"][3:], torch.arange(10).expand(3, 10))
    assert not torch.equal(seen["positions"][:3], torch.arange(10).expand(3, 10))


def test_token_cutoff_zeroes_round_ratio_of_real_rows():
    embeddings = torch.randn(3, 10, 8) + 5
    out = token_cutoff(embeddings, MASK, 0.15)
    for row, mask in zip(out, MASK, strict=True):
        zero_rows = (row == 0).all(dim=1)
        assert int(zero_rows.sum()) == round(0.15 * int(mask.sum()))
        assert not zero_rows[mask == 0].any()  # only real tokens are cut
    # kept rows are unchanged (no rescaling)
    assert torch.equal(out[out != 0], embeddings[out != 0])


def test_feature_cutoff_zeroes_int_ratio_columns_for_every_token():
    embeddings = torch.randn(3, 10, 384) + 5
    out = feature_cutoff(embeddings, 0.2)
    for row in out:
        zero_columns = (row == 0).all(dim=0)
        assert int(zero_columns.sum()) == int(0.2 * 384)
        assert not (row[:, ~zero_columns] == 0).any()
    assert torch.equal(out[out != 0], embeddings[out != 0])


def test_dropout_zeroes_about_the_ratio_of_elements():
    embeddings = torch.randn(8, 64, 384) + 5
    out = element_dropout(embeddings, 0.2)
    fraction = (out == 0).float().mean().item()
    assert fraction == pytest.approx(0.2, abs=0.01)
    assert torch.equal(out[out != 0], embeddings[out != 0])


def test_none_and_shuffle_leave_embeddings_alone():
    embeddings = torch.randn(3, 10, 8)
    for name in ("none", "shuffle"):
        assert augment_embeddings(name, embeddings, MASK, AugmentationRatios()) is embeddings


def test_fgv_points_along_the_gradient_with_norm_epsilon():
    gradient = torch.randn(3, 10, 8)
    perturbation = fgv_perturbation(gradient, 0.5)
    for g, r in zip(gradient, perturbation, strict=True):
        cosine = torch.nn.functional.cosine_similarity(g.flatten(), r.flatten(), dim=0)
        assert cosine.item() == pytest.approx(1.0, abs=1e-6)
        assert r.norm().item() == pytest.approx(0.5, abs=1e-6)


def test_adversarial_without_gradient_is_an_error():
    with pytest.raises(ValueError, match="supervised loss"):
        augment_embeddings("adversarial", torch.zeros(1, 2, 3), torch.ones(1, 2), AugmentationRatios())
