"""A training step (forward, loss and backward) replayed as CUDA graphs: the contrastive step's two views,
the NLI classifier's pass over premises and hypotheses, and the joint step built on it.

At paper scale an eager step launches about a thousand small kernels from Python, and on an H100
launching them takes longer than running them (docs/performance.md). A CUDA graph records the
step's kernels once and replays them with one launch. A graph needs static shapes, so the step runs
over the packed real tokens (:mod:`consert.train.packed`) with their count rounded up to a multiple of
``token_bucket`` (the spare slots go to a trash row, never to a real token), and one graph is
captured per ``(rows, padded length, slots)`` on first sight: a few dozen over a run. Batches stay
the authors' random ones; nothing is sorted by length.

Inside a graph: the views' random draws (they advance the CUDA generator on every replay, as eager
draws do), the packed forward, the loss, zeroing the gradients and the backward pass, which
accumulates into gradient tensors that live outside every graph, so the optimizer (eager, unchanged)
reads them in place. In bf16 the model's linear layers are cast once a step in a multi-tensor copy
(:mod:`consert.train.cast_once`). Gradient clipping and the optimizer step stay outside. fp16 (a gradient scaler
that reads the loss on the host) is not supported: the trainer keeps it eager.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from consert.encode.pooling import Pooling
from consert.encode.precision import TORCH_DTYPES, autocast
from consert.train.cast_once import CastOnce
from consert.train.packed import Packing, packed_pooled_forward

#: Packed slots are rounded up to a multiple of this: about 2% of a paper-scale step's ~2,900 tokens
#: wasted on average, against a graph per distinct token count.
TOKEN_BUCKET = 128


#: Why a step that trains in fp16 never runs as CUDA graphs.
FP16_BLOCKER = "fp16 trains under a gradient scaler that reads the host"


def graphs_unavailable(cuda_graphs: str, device: str) -> str | None:
    """Why no step can run as CUDA graphs under the setting ``cuda_graphs`` on ``device``, whatever it computes;
    None when one can (the step, its precision and ``auto``'s own rules decide then)."""
    if cuda_graphs == "off":
        return "cuda_graphs: off"
    if torch.device(device).type != "cuda":
        return f"device {device} is not CUDA"
    return None


@dataclass
class _Captured:
    """One captured step: its static inputs (written before each replay) and its static loss."""

    graph: torch.cuda.CUDAGraph
    ids: torch.Tensor
    mask: torch.Tensor
    packing: Packing
    extras: tuple[torch.Tensor, ...]
    loss: torch.Tensor


class GraphedStep:
    """``step(ids, mask, *extras)`` → the step's loss, with the gradients of ``parameters`` written into their
    ``.grad``: a replay of the graph captured for the batch's shape (captured on first sight).

    ``loss_of(ids, mask, packing, *extras)`` is the step's loss from device tensors; it must not read anything
    back to the host. ``copies``: how often the packed pass repeats the batch's rows (2: a contrastive step's
    two views; 1: a pass over the rows as they are, as the NLI step's). ``extras``: more inputs of the step
    whose shape follows the batch's (the NLI labels). Only the parameters the step reaches get gradients (as in
    an eager backward, which leaves the others' ``.grad`` None); they are overwritten on every step, never
    accumulated across steps, and must not be set to None by the caller. ``cast_once``: a model whose linear
    layers a reduced-precision step casts once a step (:class:`~consert.train.cast_once.CastOnce`).
    """

    def __init__(
        self,
        loss_of: Callable[[torch.Tensor, torch.Tensor, Packing], torch.Tensor],
        parameters: Sequence[torch.nn.Parameter],
        device: str,
        dtype: str,
        token_bucket: int = TOKEN_BUCKET,
        copies: int = 2,
        cast_once: torch.nn.Module | None = None,
    ):
        if torch.device(device).type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device, got {device!r}")
        if dtype == "fp16":
            raise ValueError(f"CUDA graphs: {FP16_BLOCKER}; use bf16 or fp32")
        self.loss_of, self.device, self.dtype, self.token_bucket = loss_of, device, dtype, token_bucket
        self.copies = copies
        self.parameters = [p for p in parameters if p.requires_grad]
        # in bf16, the linear layers of this model cast once a step (CastOnce), not at each use
        self.cast_once = (
            CastOnce(cast_once, self.parameters, TORCH_DTYPES[dtype])
            if cast_once is not None and dtype != "fp32"
            else None
        )
        self.gradients: list[torch.Tensor] | None = None  # allocated by the first capture
        self.zeroed: list[torch.Tensor] = []  # the gradients a step zeroes first: those CastOnce does not write whole
        # One memory pool for all graphs, replayed in any order: safe because nothing a graph leaves in the
        # pool outlives its replay (the loss is cloned at once; gradients and inputs live outside the pool).
        self.pool = torch.cuda.graph_pool_handle()
        self.captured: dict[tuple[int, int, int], _Captured] = {}
        self.replays = True  # False inside capturing_only()

    def capture_count(self) -> int:
        """The graphs captured so far: one per batch shape seen."""
        return len(self.captured)

    @contextmanager
    def capturing_only(self) -> Iterator[None]:
        """Inside, a call captures its batch's shape if it is new and replays nothing, returning the last
        captured loss (:func:`consert.train.loop.capture_ahead`: a benchmark's run then times steps only)."""
        self.replays = False
        try:
            yield
        finally:
            self.replays = True

    def slots(self, real_tokens: int) -> int:
        """The packed slots for ``real_tokens``: rounded up to a multiple of the bucket."""
        return -(-real_tokens // self.token_bucket) * self.token_bucket

    def _body(self, captured: _Captured) -> torch.Tensor:
        """The step as the graph records it: zero the gradients, the loss, its backward."""
        if self.zeroed:
            torch._foreach_zero_(self.zeroed)
        inputs = (captured.ids, captured.mask, captured.packing, *captured.extras)
        with autocast(self.device, self.dtype, cache=False):
            loss = self.cast_once.run(self.loss_of, *inputs) if self.cast_once else self.loss_of(*inputs)
        loss.backward()
        if self.cast_once:
            self.cast_once.write_gradients()
        return loss.detach()

    def _capture(
        self, ids: torch.Tensor, mask: torch.Tensor, packing: Packing, extras: tuple[torch.Tensor, ...]
    ) -> _Captured:
        """Static inputs shaped as this batch, one eager warm-up pass on a side stream, then the capture."""
        static = _Captured(
            torch.cuda.CUDAGraph(),
            ids.to(self.device),
            mask.to(self.device),
            packing.to(self.device),
            tuple(extra.to(self.device) for extra in extras),
            torch.empty((), device=self.device),
        )
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            if self.gradients is None:  # which parameters the step reaches: only they get (and keep) gradients
                for parameter in self.parameters:
                    parameter.grad = None
                self._body(static)
                self.parameters = [p for p in self.parameters if p.grad is not None]
            self._body(static)  # warm-up: lazy initialisation must not happen during the capture
        torch.cuda.current_stream(self.device).wait_stream(side)
        if self.gradients is None:  # one buffer per reached parameter, outside every graph's memory
            for parameter in self.parameters:
                parameter.grad = torch.zeros_like(parameter)
            self.gradients = [p.grad for p in self.parameters]
            written = self.cast_once.written() if self.cast_once else set()
            self.zeroed = [p.grad for p in self.parameters if id(p) not in written]
        with torch.cuda.graph(static.graph, pool=self.pool):
            static.loss = self._body(static)
        for parameter, gradient in zip(self.parameters, self.gradients, strict=True):
            if parameter.grad is not gradient:
                raise RuntimeError("the captured backward replaced a gradient buffer; it must accumulate into it")
        return static

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor, *extras: torch.Tensor) -> torch.Tensor:
        """The loss of one step over a batch (``ids``, ``mask``: host tensors, B x L; ``extras``: host tensors),
        gradients written."""
        rows = mask.repeat(self.copies, 1) if self.copies > 1 else mask  # the packed pass's rows
        # one bound on the segments for every batch of this shape: L, or the trash segment (< one bucket)
        packing = Packing.of(rows, self.slots(int(rows.sum())), longest=max(rows.shape[1], self.token_bucket))
        # the buffers the graphs write back in .grad, even if someone set it to None: before a new shape's
        # capture too, whose warm-up passes accumulate into them
        if self.gradients is not None:
            for parameter, gradient in zip(self.parameters, self.gradients, strict=True):
                parameter.grad = gradient
        key = (*ids.shape, len(packing.index))
        captured = self.captured.get(key)
        if captured is None:
            captured = self.captured[key] = self._capture(ids, mask, packing, extras)
        elif self.replays:
            statics = (captured.ids, captured.mask, *captured.extras)
            for static, given in zip(statics, (ids, mask, *extras), strict=True):
                static.copy_(given.pin_memory(), non_blocking=True)
            captured.packing.copy_(packing.pin_memory())
        if self.replays:
            captured.graph.replay()
        return captured.loss.clone()  # the static loss lives in the shared pool: copy it out before any replay


def graphed_probe_runner(
    candidate: tuple[str, str], device: str, purpose: str, model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor
) -> Callable[[], None]:
    """A precision probe's timed call (:func:`consert.encode.precision.training_precision`): a packed, mean-pooled
    forward and backward of ``model`` in the candidate's dtype, captured as a CUDA graph on the first
    call and replayed after: the mechanism the training step runs by, though at the probe's shape, whose
    tokens are all real (192 x 48 halved into two views: about 9,200 tokens a step, against about 2,900 in
    a paper-scale STS batch; more tokens favour bf16). On the H100 its choice, bf16, was also the faster
    end to end (56.9 against 37.9 steps/s in fp32)."""
    dtype, _ = candidate
    pooling = Pooling.parse("mean")

    def loss_of(ids: torch.Tensor, mask: torch.Tensor, packing: Packing) -> torch.Tensor:
        # the packing covers the two views' rows, the batch twice (as the training step's)
        return packed_pooled_forward(model, ids.repeat(2, 1), packing, pooling).float().pow(2).mean()

    step = GraphedStep(loss_of, list(model.parameters()), device, dtype, cast_once=model)
    ids, mask = ids[: len(ids) // 2], mask[: len(mask) // 2]  # the step doubles the rows (two views)

    def run() -> None:
        model.train()
        step(ids, mask)

    return run
