"""Each augmentation does exactly what the paper and the authors' code define (SPEC §1)."""

from __future__ import annotations

import contextlib

import pytest
import torch

from consert.train.augment import AugmentationRatios, embedding_scale, fgv_perturbation, shuffled_position_ids

MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]])


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def augmented(name: str, embeddings: torch.Tensor, mask: torch.Tensor, ratio: float) -> torch.Tensor:
    """The embedding output as the trainer's hook edits it: times the augmentation's keep mask."""
    ratios = AugmentationRatios(**{name: ratio})
    return embeddings * embedding_scale(name, mask, embeddings.shape[-1], ratios)


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
    from types import SimpleNamespace

    from consert.train import views

    seen = {}

    def fake_forward(model, input_ids, attention_mask, pooling, order=None, packed=None):
        seen["ids"], seen["positions"] = input_ids, order
        return torch.zeros(len(input_ids), 2)

    monkeypatch.setattr(views, "pooled_forward", fake_forward)
    no_edit = SimpleNamespace(applying=lambda *edits: contextlib.nullcontext())
    monkeypatch.setattr(views, "editor", lambda model: no_edit)
    ids = torch.randint(5, 100, MASK.shape) * MASK
    model = SimpleNamespace(config=SimpleNamespace(hidden_size=8))
    views.two_view_forward(model, ids, MASK, ("shuffle", "none"), None, AugmentationRatios())
    assert torch.equal(seen["ids"], ids.repeat(2, 1))
    assert torch.equal(seen["positions"][3:], torch.arange(10).expand(3, 10))
    assert not torch.equal(seen["positions"][:3], torch.arange(10).expand(3, 10))


def test_token_cutoff_zeroes_int_ratio_of_real_rows_as_the_authors():
    """n counts [CLS]/[SEP]; the count rounds down: 10 real tokens at 0.15 lose 1 row (round() would cut 2)."""
    embeddings = torch.randn(3, 10, 8) + 5
    out = augmented("token_cutoff", embeddings, MASK, 0.15)
    for row, mask, expected in zip(out, MASK, (1, 1, 0), strict=True):  # int(1.05), int(1.5), int(0.45)
        zero_rows = (row == 0).all(dim=1)
        assert int(zero_rows.sum()) == expected
        assert not zero_rows[mask == 0].any()  # only real tokens are cut
    nine = torch.tensor([[1] * 9 + [0]])
    # int(0.9) = 0: the joint rate cuts nothing from 9 tokens
    assert torch.equal(augmented("token_cutoff", embeddings[:1], nine, 0.1), embeddings[:1])
    # kept rows are unchanged (no rescaling)
    assert torch.equal(out[out != 0], embeddings[out != 0])


def test_feature_cutoff_zeroes_int_ratio_columns_for_every_token():
    embeddings = torch.randn(3, 10, 384) + 5
    out = augmented("feature_cutoff", embeddings, MASK, 0.2)
    for row in out:
        zero_columns = (row == 0).all(dim=0)
        assert int(zero_columns.sum()) == int(0.2 * 384)
        assert not (row[:, ~zero_columns] == 0).any()
    assert torch.equal(out[out != 0], embeddings[out != 0])


def test_dropout_zeroes_exactly_int_ratio_of_the_real_tokens_elements():
    embeddings = torch.randn(3, 10, 384) + 5
    out = augmented("dropout", embeddings, MASK, 0.2)
    for row, mask in zip(out, MASK, strict=True):
        n_real = int(mask.sum())
        assert int((row[:n_real] == 0).sum()) == int(0.2 * n_real * 384)
        assert not (row[n_real:] == 0).any()  # padding untouched
    assert torch.equal(out[out != 0], embeddings[out != 0])


def test_none_shuffle_and_adversarial_leave_the_embedding_scale_alone():
    for name in ("none", "shuffle", "adversarial"):  # shuffle moves positions; adversarial adds a shift
        assert embedding_scale(name, MASK, 8, AugmentationRatios()) is None


def test_fgv_gives_every_token_a_step_of_norm_epsilon_along_its_gradient():
    gradient = torch.randn(3, 10, 8) * torch.arange(1, 11).view(1, 10, 1)  # tokens of very different scale
    perturbation = fgv_perturbation(gradient, 0.5)
    cosine = torch.nn.functional.cosine_similarity(gradient, perturbation, dim=-1)
    assert torch.allclose(cosine, torch.ones(3, 10), atol=1e-6)
    assert torch.allclose(perturbation.norm(dim=-1), torch.full((3, 10), 0.5), atol=1e-6)


def test_adversarial_without_gradient_is_an_error():
    from types import SimpleNamespace

    from consert.train.views import two_view_forward, view_forward

    model = SimpleNamespace(config=SimpleNamespace(hidden_size=3))
    ids, mask = torch.ones(1, 2, dtype=torch.long), torch.ones(1, 2, dtype=torch.long)
    with pytest.raises(ValueError, match="supervised loss"):
        two_view_forward(model, ids, mask, ("none", "adversarial"), None, AugmentationRatios())
    with pytest.raises(ValueError, match="supervised loss"):
        view_forward(model, ids, mask, "adversarial", None, AugmentationRatios())


def test_the_hook_changes_the_encoders_output_in_a_real_forward_pass():
    """The stand-in, BERT's dropout removed: clean views coincide, each augmentation changes its view."""
    from consert.encode.models import STAND_IN_MODEL, resolve_model
    from consert.encode.pooling import Pooling
    from consert.train.trained_encoder import load_trainable
    from consert.train.views import two_view_forward

    tokenizer, model = load_trainable(resolve_model(STAND_IN_MODEL), "cpu", remove_dropout=True)
    batch = tokenizer(
        ["A man is playing a guitar on the stage tonight.", "Two dogs run through the deep fresh snow."],
        padding=True,
        return_tensors="pt",
    )
    ids, mask, mean = batch["input_ids"], batch["attention_mask"], Pooling.parse("mean")
    ratios = AugmentationRatios(token_cutoff=0.2, feature_cutoff=0.2, dropout=0.2)
    with torch.no_grad():
        clean1, clean2 = two_view_forward(model, ids, mask, ("none", "none"), mean, ratios)
        assert torch.allclose(clean1, clean2, atol=1e-5)
        for view in ("shuffle", "token_cutoff", "feature_cutoff", "dropout"):
            plain, augmented = two_view_forward(model, ids, mask, ("none", view), mean, ratios)
            assert torch.allclose(plain, clean1, atol=1e-5), view
            assert (augmented - clean1).norm(dim=1).min() > 1e-3, view


def test_the_batched_draws_are_uniform_over_the_real_positions():
    """Chi-square against the uniform distribution (2,000 draws, fixed seed): every real position is as
    likely to be cut, and every real position as likely to receive a given id, whatever the padding."""
    from scipy import stats

    mask = torch.tensor([[1] * 10 + [0] * 6, [0] * 4 + [1] * 12])  # right and left padding
    cut = torch.zeros(2, 16)
    first_id = torch.zeros(16)
    for _ in range(2000):
        cut += (augmented("token_cutoff", torch.ones(2, 16, 1), mask, 0.15)[..., 0] == 0).float()
        first_id[shuffled_position_ids(mask)[1, 4]] += 1
    assert cut[0, 10:].sum() == 0 and cut[1, :4].sum() == 0  # padding is never cut
    for counts in (cut[0, :10], cut[1, 4:], first_id[4:]):
        assert stats.chisquare(counts.numpy()).pvalue > 0.001
    assert first_id[:4].sum() == 0  # left padding keeps its ids, real positions get real ids
    assert shuffled_position_ids(mask)[1, :4].tolist() == [0, 1, 2, 3]
