"""A step whose linear layers are cast once (consert.train.cast_once) computes autocast's step to the bit."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from consert.encode.pooling import Pooling
from consert.train.augment import AugmentationRatios
from consert.train.cast_once import CastOnce
from consert.train.losses import nt_xent
from consert.train.packed import Packing, packed_encoder
from consert.train.views import PackedPass, two_view_forward
from tests import fixtures


def _model():
    """A tiny BERT, dropout off, every parameter moved off the values bf16 holds exactly (LayerNorm's ones and
    zeros would hide a LayerNorm cast to bf16 by mistake)."""
    _, model = fixtures.tiny_bert(vocab_size=300, hidden_size=32, layers=2, heads=4, intermediate_size=64)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.01)
    return model.train()


def _batch():
    ids, mask = fixtures.padded_batch([9, 3, 14, 6])
    return ids, mask, Packing.of(mask.repeat(2, 1))


def _loss_of(model):
    def loss_of(ids, mask, packing):
        views = two_view_forward(
            model, ids, mask, ("none", "none"), Pooling.parse("mean"), AugmentationRatios(), packed=PackedPass(packing)
        )
        return nt_xent(*views, 0.1)

    return loss_of


def _gradients(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_the_linear_layers_of_the_model_only_are_cast():
    model = _model()
    cast = CastOnce(model, list(model.parameters()), torch.bfloat16)
    linear = {f"model.{name}" for name, m in model.named_modules() if isinstance(m, nn.Linear) for name in (name,)}
    assert {name.rpartition(".")[0] for name in cast.names} == linear  # the pooler's included: it is a Linear
    assert all(copy.dtype == torch.bfloat16 and copy.is_leaf for copy in cast.copies)
    assert not any("LayerNorm" in name or "embeddings" in name for name in cast.names)
    frozen = CastOnce(model, [p for n, p in model.named_parameters() if "layer.1." in n], torch.bfloat16)
    assert frozen.names and all(".layer.1." in name for name in frozen.names)  # the trainable ones only


def test_two_steps_cast_once_equal_autocasts_steps_to_the_bit():
    """bf16 autocast on a CPU, the packed contrastive step: loss and every gradient equal, bit for bit; then the
    weights move (as an optimizer moves them) and a second step equals autocast's again: the copies are cast anew
    from the masters, and the gradients are written into the buffers the first step left, not added to them."""
    model, (ids, mask, packing) = _model(), _batch()
    loss_of = _loss_of(model)
    cast = CastOnce(model, list(model.parameters()), torch.bfloat16)
    generator = torch.Generator().manual_seed(5)
    kept: dict[int, torch.Tensor] = {}  # the cast parameters' gradient buffers, kept across steps as GraphedStep does
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", torch.bfloat16):
            reference = loss_of(ids, mask, packing)
        reference.backward()
        expected = _gradients(model)
        for parameter in model.parameters():
            parameter.grad = kept.get(id(parameter))
        with torch.autocast("cpu", torch.bfloat16):
            loss = cast.run(loss_of, ids, mask, packing)
        loss.backward()
        cast.write_gradients()
        assert torch.equal(loss, reference)
        written = _gradients(model)
        assert sorted(written) == sorted(expected)
        for name, gradient in expected.items():
            assert torch.equal(written[name], gradient), name
        assert all(kept.get(id(p), p.grad) is p.grad for p in model.parameters())  # the buffers kept
        kept = {id(p): p.grad for p in cast.masters}
        assert all(copy.grad is None for copy in cast.copies)  # the next backward hands over fresh gradients
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.01)


def test_a_step_that_runs_a_linear_layer_twice_is_refused():
    """Two passes would sum each weight's two gradients in bf16 where autocast sums them in fp32 (about 2e-3 apart):
    cast once a pass only."""
    model, (ids, mask, packing) = _model(), _batch()
    loss_of = _loss_of(model)
    cast = CastOnce(model, list(model.parameters()), torch.bfloat16)
    with (
        torch.autocast("cpu", torch.bfloat16),
        pytest.raises(ValueError, match="runs encoder.layer.0.attention.output.dense 2 times"),
    ):
        cast.run(lambda *a: loss_of(*a) + loss_of(*a), ids, mask, packing)


@pytest.mark.parametrize(
    "values",
    [
        {"mode": "unsup"},
        {"mode": "simcse"},
        {"mode": "sup"},
        {"mode": "joint"},
        {"mode": "bertflow-nli"},
        {"mode": "augcse", "augcse": {"spacy_model": None, "text_augmentations": ["random_swap"]}},
    ],
    ids=["unsup", "simcse", "sup", "joint", "bertflow-nli", "augcse"],
)
def test_each_objective_declares_the_encoder_passes_of_its_packed_step(tiny_model_dir, tiny_tree, values, monkeypatch):
    """The execution casts once only where an objective's ``graph_passes`` is 1: each graphable objective's packed
    step, counted through the trainer's parts, makes the passes it declares."""
    from consert.train import execution
    from consert.train.config import TrainConfig
    from consert.train.objectives import objective_for
    from tests.train.test_packed import objective_step

    passes = []

    def counting(*args, **kwargs):
        passes.append(1)
        return packed_encoder(*args, **kwargs)

    monkeypatch.setattr(execution, "packed_encoder", counting)
    objective_step(tiny_model_dir, tiny_tree, {**values, "packed": "on"})
    assert len(passes) == objective_for(TrainConfig.from_dict(values)).graph_passes


def test_the_execution_casts_once_for_a_one_pass_step_only():
    """The one rule the graphed step and the speed-of-light count both read (a two-pass step raised in the count)."""
    from types import SimpleNamespace

    from consert.train.execution import StepExecution

    model = nn.Linear(2, 2)
    encoder = SimpleNamespace(config=SimpleNamespace(packed="off"), model=model, train_pooling=Pooling.parse("mean"))
    execution = StepExecution(encoder)
    assert execution.cast_once_model(SimpleNamespace(graph_passes=1)) is model
    assert execution.cast_once_model(SimpleNamespace(graph_passes=2)) is None
