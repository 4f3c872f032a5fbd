"""BERT's encoder over the real tokens of a batch only: the same arithmetic, a quarter of the work.

A random batch of 96 STS texts is padded to its longest text, about 56 tokens on average (0.8% of
the 89,192 texts are longer than 48 tokens, and most batches hold one), while the texts average
15 tokens: three quarters of a padded batch's dense work (the Q/K/V, output and feed-forward
layers, the layer norms) is spent on padding. Here every layer runs on the real tokens alone,
gathered into one T x d matrix (T = the batch's real tokens). Batches stay the authors' random
ones: nothing is sorted by length.

Attention, the one operation that mixes tokens, runs by one of two kernels (:func:`attention_kernel`):

* ``varlen``: on CUDA in bf16/fp16, FlashAttention's variable-length kernel over the packed Q/K/V
  directly (each text a segment of ``Packing.offsets``): no padded buffer, no masked pair. With
  attention dropout on, its masks are drawn by the kernel's own generator, so a run equals a
  padded run in distribution, not draw for draw (the recipe card says so).
* ``padded``: elsewhere (CPU, fp32), the packed Q/K/V scattered into the padded B x L layout and
  torch's ``scaled_dot_product_attention`` with the padding keys masked, as in the Hugging Face model.

Both read one fused Q/K/V projection (the three weights concatenated: one matmul, one cast under
autocast). :func:`jagged_attention` computes the ``varlen`` contract with torch's jagged nested
tensors on any device: the float64 reference the tests hold both kernels to.

The layers are the model's own modules (``BertSelfOutput``, ``BertIntermediate``, ``BertOutput``
called as they are; the self-attention's projections, scaling and dropout as in
``BertSelfAttention``), so a padded position never changes a real token's value, and the result
equals the Hugging Face forward pass up to float rounding (a test, values and gradients). Which
tokens are real is computed on the host from the batch's attention mask (:class:`Packing`), so a
step needs no device-to-host synchronisation.

A packing may hold more slots than real tokens (``capacity``): the spare slots point at one extra
"trash" position past the padded layout and a trash row past the batch, and form one trash segment
of their own in attention, so they are computed but never reach a real token, a key or a pooled
vector. Rounding T up to a multiple makes the shapes of a step repeat, which is what a CUDA graph
needs (:mod:`consert.train.graphs`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from consert.encode.batching import to_device
from consert.encode.pooling import Pooling
from consert.hardware import cuda_card_paths
from consert.train.architectures import embed


@dataclass(frozen=True)
class Packing:
    """Where a padded batch's real tokens are: ``index`` into the flattened B*L positions (T slots; a
    spare slot holds B*L, the trash position), the row of each (``row``, T; a spare slot holds B, the
    trash row), the first real token of each row in packed order (``first``, B), real tokens per row
    (``lengths``, B), which positions are real keys (``keys``, B x L), the segments' boundaries in
    packed order (``offsets``, int32, B + 2: each row's, then the trash segment's, which may be empty),
    the padded shape, and ``longest``, a bound on every segment's length (the trash one's included)
    that the variable-length kernel sizes its work by."""

    index: torch.Tensor
    row: torch.Tensor
    first: torch.Tensor
    lengths: torch.Tensor
    keys: torch.Tensor
    offsets: torch.Tensor
    rows: int
    length: int
    longest: int

    @classmethod
    def of(cls, attention_mask: torch.Tensor, capacity: int | None = None, longest: int | None = None) -> Packing:
        """The packing of a B x L attention mask (computed where the mask is: pass the host copy), with
        ``capacity`` slots (default: exactly the real tokens; more: the spare ones go to the trash) and
        ``longest`` (default: the longer of L and the spare slots; a CUDA graph passes one bound for every
        batch it replays)."""
        keys = attention_mask.bool()
        rows, length = keys.shape
        index = keys.reshape(-1).nonzero(as_tuple=True)[0]
        row = torch.div(index, length, rounding_mode="floor")
        capacity = len(index) if capacity is None else capacity
        if capacity < len(index):
            raise ValueError(f"a packing of {capacity} slots cannot hold the batch's {len(index)} real tokens")
        spare = capacity - len(index)
        longest = max(length, spare) if longest is None else longest
        if longest < max(length, spare):
            raise ValueError(f"longest {longest} is shorter than a segment of the packing ({max(length, spare)})")
        lengths = keys.sum(dim=1)
        ends = torch.cumsum(lengths, 0)
        return cls(
            index=torch.cat([index, index.new_full((spare,), rows * length)]),
            row=torch.cat([row, row.new_full((spare,), rows)]),
            first=ends - lengths,
            lengths=lengths,
            keys=keys,
            offsets=torch.cat([ends.new_zeros(1), ends, ends.new_full((1,), capacity)]).to(torch.int32),
            rows=rows,
            length=length,
            longest=longest,
        )

    def to(self, device: str | torch.device) -> Packing:
        """The same packing with its tensors on ``device`` (from pinned memory, not blocking, on CUDA)."""
        return Packing(*to_device(self.tensors(), str(device)), self.rows, self.length, self.longest)

    def pin_memory(self) -> Packing:
        """The same packing in pinned host memory (for a non-blocking copy to the device)."""
        return Packing(*(t.pin_memory() for t in self.tensors()), self.rows, self.length, self.longest)

    def copy_(self, other: Packing) -> Packing:
        """Copy ``other`` (same shapes and bound; e.g. a host packing) into this one's tensors, in place;
        returns self."""
        if other.shape() != self.shape():
            raise ValueError("copy_ needs a packing of the same rows, length, capacity and longest")
        for mine, theirs in zip(self.tensors(), other.tensors(), strict=True):
            mine.copy_(theirs, non_blocking=True)
        return self

    def shape(self) -> tuple[int, int, int, int]:
        """``(rows, length, capacity, longest)``: what a packing's kernels are sized by."""
        return self.rows, self.length, len(self.index), self.longest

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """``(index, row, first, lengths, keys, offsets)``."""
        return self.index, self.row, self.first, self.lengths, self.keys, self.offsets


#: ``attention(q, k, v, packing, dropout, scale)``: T x H x D packed queries, keys and values to the T x H x D
#: context, each token attending to the real tokens of its own row.
Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Packing, float, float], torch.Tensor]


def padded_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packing: Packing, dropout: float, scale: float
) -> torch.Tensor:
    """Attention in the padded B x L layout: the packed Q/K/V scattered into it (a zero-filled trash position
    past it), the padding keys masked, the context gathered back (the trash slots read zeros)."""
    heads, size = q.shape[1:]
    positions = packing.rows * packing.length
    padded = []
    for values in (q, k, v):
        flat = values.reshape(len(values), heads * size)
        layout = flat.new_zeros(positions + 1, heads * size).index_copy(0, packing.index, flat)[:positions]
        padded.append(layout.view(packing.rows, packing.length, heads, size).transpose(1, 2))
    mask = packing.keys.view(packing.rows, 1, 1, packing.length)  # the keys to attend
    context = F.scaled_dot_product_attention(*padded, attn_mask=mask, dropout_p=dropout, scale=scale)
    context = context.transpose(1, 2).reshape(positions, heads * size)
    return F.pad(context, (0, 0, 0, 1)).index_select(0, packing.index).view(-1, heads, size)


def varlen_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packing: Packing, dropout: float, scale: float
) -> torch.Tensor:
    """FlashAttention's variable-length kernel (CUDA, bf16/fp16) over the packed segments: the aten operator
    behind torch's ``nn.attention.varlen`` and its jagged nested tensors, called directly because it also
    takes attention dropout. ``packing.longest`` sizes its grid, so a CUDA graph replays it for any batch of
    its shape."""
    offsets, longest = packing.offsets, packing.longest
    return torch.ops.aten._flash_attention_forward(
        q, k, v, offsets, offsets, longest, longest, dropout, False, False, scale=scale
    )[0]


def jagged_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packing: Packing, dropout: float, scale: float
) -> torch.Tensor:
    """:func:`varlen_attention`'s contract on any device and dtype, through torch's jagged nested tensors (on CPU
    their reference implementation, one segment at a time): the tests' float64 reference for both kernels."""
    offsets = packing.offsets.long()
    nested = [
        torch.nested.nested_tensor_from_jagged(t.contiguous(), offsets, min_seqlen=0, max_seqlen=packing.longest)
        for t in (q, k, v)
    ]
    with warnings.catch_warnings():  # its per-segment path builds strided nested tensors, a prototype API
        warnings.filterwarnings("ignore", "The PyTorch API of nested tensors is in prototype stage")
        context = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in nested), dropout_p=dropout, scale=scale)
    return context.transpose(1, 2).values()


#: The attention kernels by name (:func:`attention_kernel` picks one).
ATTENTION_KERNELS: dict[str, Attention] = {
    "varlen": varlen_attention,
    "padded": padded_attention,
    "jagged": jagged_attention,
}


def attention_kernel(q: torch.Tensor) -> str:
    """``varlen`` where FlashAttention's variable-length kernel takes ``q`` (CUDA on a card that runs it, compute
    capability 8.0 and up: :func:`consert.hardware.card_paths`; bf16 or fp16, head size a multiple of 8 up to 256,
    flash attention enabled), else ``padded``."""
    head_size = q.shape[-1]
    if (
        q.is_cuda
        and q.dtype in (torch.bfloat16, torch.float16)
        and head_size % 8 == 0
        and head_size <= 256
        and torch.backends.cuda.flash_sdp_enabled()
        and cuda_card_paths(q.device).attention == "varlen"
    ):
        return "varlen"
    return "padded"


def _self_attention(
    attention: nn.Module, hidden: torch.Tensor, packing: Packing, kernel: str | None = None
) -> torch.Tensor:
    """``BertSelfAttention`` on packed tokens (T x d → T x d): one fused Q/K/V projection, then attention by
    ``kernel`` (default: :func:`attention_kernel`'s choice for the projected queries)."""
    heads, size = attention.num_attention_heads, attention.attention_head_size
    projections = (attention.query, attention.key, attention.value)
    weight = torch.cat([projection.weight for projection in projections])
    bias = torch.cat([projection.bias for projection in projections])
    q, k, v = F.linear(hidden, weight, bias).view(len(hidden), 3, heads, size).unbind(1)
    dropout = attention.dropout.p if attention.training else 0.0
    scaling = getattr(attention, "scaling", size**-0.5)  # transformers 4 has no attribute for it
    context = ATTENTION_KERNELS[kernel or attention_kernel(q)](q, k, v, packing, dropout, scaling)
    return context.reshape(len(hidden), heads * size)


def layer_tail(layer: nn.Module, context: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """A BERT layer after its attention, on packed tokens (T x d each: the attention's context, the layer's
    input): the output projection, dropout, the residual and LayerNorm, then the feed-forward block (bias and
    GELU, the projection, dropout, the residual and LayerNorm), the model's own modules called as they are.
    Every operation here is per token: the chain :func:`consert.train.fused.compiled_layer_tail` fuses."""
    attended = layer.attention.output(context, hidden)
    return layer.output(layer.intermediate(attended), attended)


#: ``tail(layer, context, hidden)``: a layer's output after its attention (:func:`layer_tail`, or it compiled).
LayerTail = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]


def packed_hidden_states(
    model: nn.Module, embedded: torch.Tensor, packing: Packing, kernel: str | None = None, tail: LayerTail = layer_tail
) -> list[torch.Tensor]:
    """Every hidden state's token vectors (T x d each) of the packing's slots, from the embedding output
    (B x L x d): the embedding output itself, then each layer's, as ``output_hidden_states`` lists them.
    ``kernel``: the attention kernel's name (default: :func:`attention_kernel`'s choice); ``tail``: each
    layer's per-token chain after attention (:func:`layer_tail`, or it compiled)."""
    flat = embedded.reshape(packing.rows * packing.length, -1)
    hidden = F.pad(flat, (0, 0, 0, 1)).index_select(0, packing.index)
    states = [hidden]
    for layer in model.encoder.layer:
        hidden = tail(layer, _self_attention(layer.attention.self, hidden, packing, kernel), hidden)
        states.append(hidden)
    return states


def packed_encoder(
    model: nn.Module, embedded: torch.Tensor, packing: Packing, kernel: str | None = None, tail: LayerTail = layer_tail
) -> torch.Tensor:
    """The last layer's token vectors (T x d) of the packing's slots, from the embedding output (B x L x d)."""
    return packed_hidden_states(model, embedded, packing, kernel, tail)[-1]


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
    model: nn.Module, input_ids: torch.Tensor, packing: Packing, pooling: Pooling, encoder=packed_encoder
) -> torch.Tensor:
    """Pooled vectors (B x d) of one pass: the first encoder layer's input (the embedding module, ELECTRA's
    projection; the views' hooks act within), then ``encoder`` (:func:`packed_encoder`, or a compiled copy of it)
    over the real tokens."""
    return packed_pool(pooling, encoder(model, embed(model, input_ids), packing), packing)
