"""Forward passes through a Hugging Face encoder with augmented embedding outputs.

An augmentation edits the input of the model's first encoder layer (:func:`consert.train.architectures.
first_layer_input`: the embedding module's output, or ELECTRA's projection of it): one forward hook (the public
``register_forward_hook`` API), registered once per model, multiplies that output by a ``scale`` and
adds a ``shift`` when they are set for a pass (:class:`EmbeddingEditor`). Token shuffling permutes the model's own
position ids among each row's real tokens where the model reads them (:class:`PositionEditor`, a forward pre-hook
on that module: RoBERTa's offset ids stay RoBERTa's). No patched copy of transformers is needed. The edits are
tensors drawn before the pass (:mod:`consert.train.augment`), so a compiled model sees the same hook every step,
with new inputs rather than new code. Both views of a batch go through the encoder in one fused 2B-row pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from consert.encode.pooling import Pooling
from consert.train.architectures import first_layer_input, position_reader
from consert.train.augment import AugmentationRatios, embedding_scale, shuffled_position_ids
from consert.train.packed import Packing, packed_encoder, packed_pooled_forward


@dataclass(frozen=True)
class PackedPass:
    """A pass over the real tokens only (:mod:`consert.train.packed`): where they are, and the encoder to run
    (:func:`consert.train.packed.packed_encoder` or a compiled copy)."""

    packing: Packing
    encoder: Callable = packed_encoder


class EmbeddingEditor:
    """The forward hook on a model's embedding module: ``output * scale + shift`` while they are set
    (:meth:`applying`), the output kept when :attr:`capture` is on, the identity otherwise."""

    def __init__(self, module: nn.Module):
        self.scale: torch.Tensor | None = None
        self.shift: torch.Tensor | None = None
        self.captured: list[torch.Tensor] | None = None
        self.handle = module.register_forward_hook(self)

    def __call__(self, _module: nn.Module, _inputs, output: torch.Tensor) -> torch.Tensor:
        if self.scale is not None:
            output = output * self.scale.to(output.dtype)
        if self.shift is not None:
            output = output + self.shift.to(output.dtype)
        if self.captured is not None:
            self.captured.append(output)
        return output

    @contextlib.contextmanager
    def applying(self, scale: torch.Tensor | None = None, shift: torch.Tensor | None = None) -> Iterator[None]:
        """Within the block, the embedding output is ``output * scale + shift`` (either may be None)."""
        self.scale, self.shift = scale, shift
        try:
            yield
        finally:
            self.scale = self.shift = None


def editor(model: nn.Module) -> EmbeddingEditor:
    """The model's embedding editor, on its first encoder layer's input, registered on first use and kept for the
    model's lifetime."""
    module = first_layer_input(model)
    found = module.__dict__.get("_consert_editor")
    if found is None:
        found = module.__dict__["_consert_editor"] = EmbeddingEditor(module)
    return found


class PositionEditor:
    """The forward pre-hook on the module that reads a model's position ids: while an ``order`` is set
    (:meth:`permuting`; B x L, each row a permutation of its positions), the ids the model computed are gathered by
    it (``ids[b, order[b, j]]`` at position j), so a shuffle permutes the model's own ids, whatever they start at."""

    def __init__(self, module: nn.Module, argument: int):
        self.order: torch.Tensor | None = None
        self.argument = argument
        self.handle = module.register_forward_pre_hook(self)

    def __call__(self, _module: nn.Module, args: tuple):
        if self.order is None:
            return None
        ids = args[self.argument]
        ids = ids.expand(self.order.shape[0], -1).gather(1, self.order.to(ids.device))
        return (*args[: self.argument], ids, *args[self.argument + 1 :])

    @contextlib.contextmanager
    def permuting(self, order: torch.Tensor | None) -> Iterator[None]:
        """Within the block, the model's position ids are permuted by ``order`` (None: left as they are)."""
        self.order = order
        try:
            yield
        finally:
            self.order = None


def positions(model: nn.Module) -> PositionEditor:
    """The model's position editor, registered on first use and kept for the model's lifetime; a ValueError for a
    model with no absolute positions (the trainer refuses a shuffle view for it before any work)."""
    reader = position_reader(model)
    if reader is None:
        raise ValueError(f"{type(model).__name__} reads no absolute position ids: nothing to shuffle")
    module, argument = reader
    found = module.__dict__.get("_consert_positions")
    if found is None:
        found = module.__dict__["_consert_positions"] = PositionEditor(module, argument)
    return found


@contextlib.contextmanager
def permuted(model: nn.Module, order: torch.Tensor | None) -> Iterator[None]:
    """Within the block, ``model``'s position ids permuted by ``order`` (B x L; None: as they are)."""
    if order is None:  # the model's own ids: no hook needed (a model without absolute positions has none)
        yield
        return
    with positions(model).permuting(order):
        yield


def pooled_forward(
    model: nn.Module, input_ids, attention_mask, pooling: Pooling, order=None, packed: PackedPass | None = None
) -> torch.Tensor:
    """Pooled sentence vectors (B x d) of one forward pass (over the real tokens only with ``packed``), the model's
    position ids permuted by ``order`` (B x L; None: as they are)."""
    with permuted(model, order):
        if packed is not None:
            return packed_pooled_forward(model, input_ids, packed.packing, pooling, packed.encoder)
        out = model(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=pooling.needs_all_hidden_states
        )
    hidden = out.hidden_states if pooling.needs_all_hidden_states else (out.last_hidden_state,)
    return pooling(hidden, attention_mask)


def forward_with_embedding_grad(
    model: nn.Module, input_ids, attention_mask, pooling: Pooling, packed: PackedPass | None = None
):
    """Clean forward pass that also returns the embedding output, kept in the graph for FGV."""
    hook = editor(model)
    hook.captured = []
    try:
        pooled = pooled_forward(model, input_ids, attention_mask, pooling, packed=packed)
        return pooled, hook.captured[0]
    finally:
        hook.captured = None


def _order(view: str, attention_mask: torch.Tensor) -> torch.Tensor:
    """The order of a view's positions (B x L): each row's real positions permuted for ``shuffle``, else as they are."""
    batch, length = attention_mask.shape
    if view == "shuffle":
        return shuffled_position_ids(attention_mask)
    return torch.arange(length, device=attention_mask.device).expand(batch, length)


def view_forward(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    view: str,
    pooling: Pooling,
    ratios: AugmentationRatios,
    perturbation: torch.Tensor | None = None,
    packed: PackedPass | None = None,
) -> torch.Tensor:
    """Pooled vectors (B x d) of one augmented view of every sentence (``packed``: its packing covers the B rows)."""
    if view == "adversarial" and perturbation is None:
        raise ValueError("the adversarial augmentation needs a supervised loss (modes joint/joint-unsup)")
    dim = model.config.hidden_size
    order = shuffled_position_ids(attention_mask) if view == "shuffle" else None
    scale = embedding_scale(view, attention_mask, dim, ratios)
    shift = perturbation if view == "adversarial" else None
    with editor(model).applying(scale, shift):
        return pooled_forward(model, input_ids, attention_mask, pooling, order=order, packed=packed)


def two_view_forward(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    views: tuple[str, str],
    pooling: Pooling,
    ratios: AugmentationRatios,
    perturbation: torch.Tensor | None = None,
    packed: PackedPass | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pooled vectors of two augmented views of every sentence (each B x d), in one 2B-row pass
    (``packed``: its packing covers the 2B rows, the batch twice)."""
    batch, length = input_ids.shape
    dim = model.config.hidden_size
    order = torch.cat([_order(view, attention_mask) for view in views]) if "shuffle" in views else None
    scales = [embedding_scale(view, attention_mask, dim, ratios) for view in views]
    scale = None
    if any(s is not None for s in scales):
        ones = torch.ones(batch, length, dim, device=input_ids.device)
        scale = torch.cat([ones if s is None else s.expand(batch, length, dim) for s in scales])
    shift = None
    if "adversarial" in views:
        if perturbation is None:
            raise ValueError("the adversarial augmentation needs a supervised loss (modes joint/joint-unsup)")
        zeros = torch.zeros_like(perturbation)
        shift = torch.cat([perturbation if view == "adversarial" else zeros for view in views])
    with editor(model).applying(scale, shift):
        pooled = pooled_forward(model, input_ids.repeat(2, 1), attention_mask.repeat(2, 1), pooling, order, packed)
    return pooled[:batch], pooled[batch:]
