"""BERT's encoder over the real tokens of a batch only: the same arithmetic, a quarter of the work.

A random batch of 96 STS texts is padded to its longest text, about 56 tokens on average (0.8% of
the 89,192 texts are longer than 48 tokens, and most batches hold one), while the texts average
15 tokens: three quarters of a padded batch's dense work (the Q/K/V, output and feed-forward
layers, the layer norms) is spent on padding. Here those per-token layers run on the real tokens
alone, gathered into one T x d matrix (T = the batch's real tokens); only attention, the one
operation that mixes tokens, sees the padded B x L layout, where padding keys are masked as in
the Hugging Face model. Batches stay the authors' random ones: nothing is sorted by length.

The layers are the model's own modules (``BertSelfOutput``, ``BertIntermediate``, ``BertOutput``
called as they are; the self-attention's projections, scaling, mask and dropout as in
``BertSelfAttention``), so a padded position never changes a real token's value, and the result
equals the Hugging Face forward pass up to float rounding (a test, values and gradients). Which
tokens are real is computed on the host from the batch's attention mask (:class:`Packing`), so a
step needs no device-to-host synchronisation.

A packing may hold more slots than real tokens (``capacity``): the spare slots point at one extra
"trash" position past the padded layout and a trash row past the batch, so they are computed but
never reach a real token, a key or a pooled vector. Rounding T up to a multiple makes the shapes of
a step repeat, which is what a CUDA graph needs (:mod:`consert.train.graphs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from consert.encode.batching import to_device
from consert.encode.pooling import Pooling


@dataclass(frozen=True)
class Packing:
    """Where a padded batch's real tokens are: ``index`` into the flattened B*L positions (T slots; a
    spare slot holds B*L, the trash position), the row of each (``row``, T; a spare slot holds B, the
    trash row), the first real token of each row in packed order (``first``, B), real tokens per row
    (``lengths``, B), which positions are real keys (``keys``, B x L), and the padded shape."""

    index: torch.Tensor
    row: torch.Tensor
    first: torch.Tensor
    lengths: torch.Tensor
    keys: torch.Tensor
    rows: int
    length: int

    @classmethod
    def of(cls, attention_mask: torch.Tensor, capacity: int | None = None) -> Packing:
        """The packing of a B x L attention mask (computed where the mask is: pass the host copy), with
        ``capacity`` slots (default: exactly the real tokens; more: the spare ones go to the trash)."""
        keys = attention_mask.bool()
        rows, length = keys.shape
        index = keys.reshape(-1).nonzero(as_tuple=True)[0]
        row = torch.div(index, length, rounding_mode="floor")
        capacity = len(index) if capacity is None else capacity
        if capacity < len(index):
            raise ValueError(f"a packing of {capacity} slots cannot hold the batch's {len(index)} real tokens")
        spare = capacity - len(index)
        lengths = keys.sum(dim=1)
        return cls(
            index=torch.cat([index, index.new_full((spare,), rows * length)]),
            row=torch.cat([row, row.new_full((spare,), rows)]),
            first=torch.cumsum(lengths, 0) - lengths,
            lengths=lengths,
            keys=keys,
            rows=rows,
            length=length,
        )

    def to(self, device: str | torch.device) -> Packing:
        """The same packing with its tensors on ``device`` (from pinned memory, not blocking, on CUDA)."""
        tensors = to_device((self.index, self.row, self.first, self.lengths, self.keys), str(device))
        return Packing(*tensors, self.rows, self.length)

    def copy_(self, other: Packing) -> Packing:
        """Copy ``other`` (same shapes; e.g. a host packing) into this one's tensors, in place; returns self."""
        if (other.rows, other.length, len(other.index)) != (self.rows, self.length, len(self.index)):
            raise ValueError("copy_ needs a packing of the same rows, length and capacity")
        for mine, theirs in zip(self.tensors(), other.tensors(), strict=True):
            mine.copy_(theirs, non_blocking=True)
        return self

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """``(index, row, first, lengths, keys)``."""
        return self.index, self.row, self.first, self.lengths, self.keys


def _self_attention(attention: nn.Module, hidden: torch.Tensor, packing: Packing, mask: torch.Tensor) -> torch.Tensor:
    """``BertSelfAttention`` on packed tokens: projections on the T tokens, attention in the padded layout."""
    heads, size = attention.num_attention_heads, attention.attention_head_size
    padded = []
    positions = packing.rows * packing.length
    for projection in (attention.query, attention.key, attention.value):
        values = projection(hidden)
        layout = values.new_zeros(positions + 1, heads * size).index_copy(0, packing.index, values)[:positions]
        padded.append(layout.view(packing.rows, packing.length, heads, size).transpose(1, 2))
    dropout = attention.dropout.p if attention.training else 0.0
    scaling = getattr(attention, "scaling", size**-0.5)  # transformers 4 has no attribute for it
    context = F.scaled_dot_product_attention(*padded, attn_mask=mask, dropout_p=dropout, scale=scaling)
    context = context.transpose(1, 2).reshape(positions, heads * size)
    return F.pad(context, (0, 0, 0, 1)).index_select(0, packing.index)  # the trash position reads zeros


def packed_hidden_states(model: nn.Module, embedded: torch.Tensor, packing: Packing) -> list[torch.Tensor]:
    """Every hidden state's token vectors (T x d each) of the packing's slots, from the embedding output
    (B x L x d): the embedding output itself, then each layer's, as ``output_hidden_states`` lists them."""
    flat = embedded.reshape(packing.rows * packing.length, -1)
    hidden = F.pad(flat, (0, 0, 0, 1)).index_select(0, packing.index)
    mask = packing.keys.view(packing.rows, 1, 1, packing.length)  # the keys to attend
    states = [hidden]
    for layer in model.encoder.layer:
        context = _self_attention(layer.attention.self, hidden, packing, mask)
        attended = layer.attention.output(context, hidden)
        hidden = layer.output(layer.intermediate(attended), attended)
        states.append(hidden)
    return states


def packed_encoder(model: nn.Module, embedded: torch.Tensor, packing: Packing) -> torch.Tensor:
    """The last layer's token vectors (T x d) of the packing's slots, from the embedding output (B x L x d)."""
    return packed_hidden_states(model, embedded, packing)[-1]


def packed_pool(pooling: Pooling, hidden: torch.Tensor, packing: Packing) -> torch.Tensor:
    """``cls`` or ``mean`` of the last layer (B x d) from packed token vectors (T x d)."""
    if pooling.layers != (-1,):
        raise ValueError(f"pooling {pooling}: the packed forward keeps the last layer only (cls or mean)")
    if pooling.kind == "cls":
        return hidden.index_select(0, packing.first)
    summed = hidden.new_zeros(packing.rows + 1, hidden.shape[1], dtype=torch.float32)  # + the trash row
    summed = summed.index_add(0, packing.row, hidden.float())[: packing.rows]
    return summed / packing.lengths.unsqueeze(1).to(summed.dtype)


def packed_pooled_forward(
    model: nn.Module,
    input_ids: torch.Tensor,
    packing: Packing,
    pooling: Pooling,
    position_ids: torch.Tensor | None = None,
    encoder=packed_encoder,
) -> torch.Tensor:
    """Pooled vectors (B x d) of one pass: the model's embedding module (and its editor's hook), then
    ``encoder`` (:func:`packed_encoder`, or a compiled copy of it) over the real tokens."""
    embedded = model.embeddings(input_ids=input_ids, position_ids=position_ids)
    return packed_pool(pooling, encoder(model, embedded, packing), packing)
