"""Forward passes through a Hugging Face encoder with augmented embedding outputs.

The augmentation is applied by a forward hook on the model's embedding module (public
``register_forward_hook`` API), and token shuffling by passing ``position_ids``: no patched copy of
transformers is needed. Both views of a batch go through the encoder in one fused 2B-row pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import nn

from .augment import AugmentationRatios, augment_embeddings, shuffled_position_ids
from .pooling import Pooling


def embedding_module(model: nn.Module) -> nn.Module:
    """The module whose output is the embedding layer output (BERT-style ``model.embeddings``)."""
    module = getattr(model, "embeddings", None)
    if not isinstance(module, nn.Module):
        raise ValueError(f"{type(model).__name__} has no `embeddings` module; ConSERT views need a BERT-style encoder")
    return module


@contextlib.contextmanager
def edited_embeddings(model: nn.Module, edit: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """Within the block, the embedding layer's output ``x`` is replaced by ``edit(x)``."""
    handle = embedding_module(model).register_forward_hook(lambda _module, _inputs, output: edit(output))
    try:
        yield
    finally:
        handle.remove()


def pooled_forward(model: nn.Module, input_ids, attention_mask, pooling: Pooling, position_ids=None) -> torch.Tensor:
    """Pooled sentence vectors (B x d) of one forward pass."""
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        output_hidden_states=pooling.needs_all_hidden_states,
    )
    hidden = out.hidden_states if pooling.needs_all_hidden_states else (out.last_hidden_state,)
    return pooling(hidden, attention_mask)


def forward_with_embedding_grad(model: nn.Module, input_ids, attention_mask, pooling: Pooling):
    """Clean forward pass that also returns the embedding output, kept in the graph for FGV."""
    captured: list[torch.Tensor] = []

    def keep(output: torch.Tensor) -> torch.Tensor:
        captured.append(output)
        return output

    with edited_embeddings(model, keep):
        pooled = pooled_forward(model, input_ids, attention_mask, pooling)
    return pooled, captured[0]


def view_forward(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    view: str,
    pooling: Pooling,
    ratios: AugmentationRatios,
    perturbation: torch.Tensor | None = None,
) -> torch.Tensor:
    """Pooled vectors (B x d) of one augmented view of every sentence."""
    positions = shuffled_position_ids(attention_mask) if view == "shuffle" else None

    def augment(output: torch.Tensor) -> torch.Tensor:
        return augment_embeddings(view, output, attention_mask, ratios, perturbation)

    with edited_embeddings(model, augment):
        return pooled_forward(model, input_ids, attention_mask, pooling, position_ids=positions)


def two_view_forward(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    views: tuple[str, str],
    pooling: Pooling,
    ratios: AugmentationRatios,
    perturbation: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pooled vectors of two augmented views of every sentence (each B x d), in one 2B-row pass."""
    batch, length = input_ids.shape
    default_positions = torch.arange(length, device=input_ids.device).expand(batch, length)
    positions = [shuffled_position_ids(attention_mask) if view == "shuffle" else default_positions for view in views]

    def augment(output: torch.Tensor) -> torch.Tensor:
        halves = [
            augment_embeddings(view, part, attention_mask, ratios, perturbation)
            for view, part in zip(views, output.split(batch), strict=True)
        ]
        return torch.cat(halves)

    with edited_embeddings(model, augment):
        pooled = pooled_forward(
            model,
            input_ids.repeat(2, 1),
            attention_mask.repeat(2, 1),
            pooling,
            position_ids=torch.cat(positions),
        )
    return pooled[:batch], pooled[batch:]
