"""How a training step executes: eagerly, through a compiled forward, packed on real tokens only, or
replayed as CUDA graphs (their layers' per-token chain compiled into fused kernels or not). Chosen once per
stage, when the plan (its step count) is known."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from consert.encode.batching import to_device
from consert.encode.precision import training_precision
from consert.train.architectures import fast_path_fault
from consert.train.fused import fused_encoder, use_compile_cache
from consert.train.graphs import FP16_BLOCKER, GraphedStep, graphed_probe_runner, graphs_unavailable
from consert.train.packed import Packing, packed_encoder
from consert.train.views import PackedPass

if TYPE_CHECKING:
    from consert.train.trained_encoder import TrainedEncoder


@dataclass(frozen=True)
class DeviceBatch:
    """A batch of texts padded and on the device, its mask's host copy (a packing is computed from it without
    reading the device back), and its packing as one pass over its rows when the step packs."""

    ids: torch.Tensor
    mask: torch.Tensor
    host_mask: torch.Tensor
    packed: PackedPass | None


#: A loss of a tokenized batch on the device, packed on its real tokens, with no host reads: ``(ids, mask,
#: packed, *extras)``, the extras being the step's other inputs (the NLI labels).
GraphedLoss = Callable[..., torch.Tensor]


class GraphableStep(Protocol):
    """What the execution asks of an objective (:class:`consert.train.objectives.base.Objective` keeps it)."""

    graphs_blocker: str | None  # why its step cannot run as CUDA graphs; None: it can
    graph_copies: int  # how often its packed pass repeats a batch's rows
    graph_passes: int  # the encoder passes its step makes (one: the linear layers may be cast once)
    graphed_loss: GraphedLoss  # its step's loss with no host reads

    def loss(self, batch: list[Any]) -> torch.Tensor: ...  # a batch's loss, through the execution's path

    def heads(self) -> list[nn.Module]: ...  # its training-only modules


#: ``compile: auto`` compiles the training forward on CUDA for runs of at least this many steps.
COMPILE_MIN_STEPS = 500


class StepExecution:
    """The forward a step runs through (the model, or it compiled), whether the two views are packed on
    their real tokens, and the CUDA graphs of the step when they apply."""

    def __init__(self, encoder: TrainedEncoder):
        self.encoder, self.config = encoder, encoder.config
        self.forward_model: nn.Module = encoder.model  # compiled by compile_forward when asked
        self.compiled = False
        # off by default: on the H100 the padded compiled step measured faster (30.0 against 27.6 steps/s);
        # both are bound by kernel launches, and the packed one has a third less GPU work (docs/performance.md).
        # Every objective's passes pack when on (the views, the NLI pairs, AugCSE's three texts)
        self.packed = self.config.packed == "on" and encoder.train_pooling.layers == (-1,)
        self.packed_encoder = packed_encoder
        self.graphed: GraphedStep | None = None  # the step as CUDA graphs (settle)
        #: The fast paths an ``auto`` setting would have taken and the model's architecture keeps from it
        #: (:mod:`consert.train.architectures`), or that failed its self-check (:mod:`consert.train.self_check`), each
        #: with why: the run's record says so.
        self.eager_because: list[str] = []

    def graphs_blocker(self, objective: GraphableStep, planned_steps: int) -> str | None:
        """Why this stage cannot (or, under ``cuda_graphs: auto``, should not) train through CUDA graphs,
        whatever the precision; None when it can. The objective may have reasons of its own."""
        config = self.config
        unavailable = graphs_unavailable(config.cuda_graphs, self.encoder.device)
        if unavailable is not None:
            return unavailable
        if fault := fast_path_fault(self.encoder.model.config, "cuda_graphs"):
            return fault
        if objective.graphs_blocker is not None:
            return objective.graphs_blocker
        if "adversarial" in config.views:
            return "the adversarial view needs a supervised gradient"
        if self.encoder.train_pooling.layers != (-1,):
            return f"train_pooling {config.train_pooling}: the packed forward keeps the last layer only"
        if config.cuda_graphs == "auto" and planned_steps < COMPILE_MIN_STEPS:
            return f"auto: {planned_steps} planned steps < {COMPILE_MIN_STEPS}"
        return None

    def settle(self, planned_steps: int, parameters: list[nn.Parameter], objective: GraphableStep) -> None:
        """Once the plan is known: the precision, then how the step runs. CUDA graphs over the packed
        step when ``cuda_graphs`` says so (``auto``: where they apply, on CUDA runs of
        :data:`COMPILE_MIN_STEPS` steps or more; ``dtype: auto`` then measures only the precisions a
        graph can take), else a compiled forward when ``compile`` says so. ``cuda_graphs: on`` where
        they cannot apply is an error that says why. The objective says whether its step can be graphed
        (``graphs_blocker``), what the graphs run (``graphed_loss``) and how often its packed pass repeats a
        batch's rows (``graph_copies``)."""
        config, encoder = self.config, self.encoder
        blocker = self.graphs_blocker(objective, planned_steps)
        if blocker is not None and blocker == fast_path_fault(encoder.model.config, "cuda_graphs"):
            self.eager_because.append(f"cuda_graphs: {config.cuda_graphs}: {blocker}")
        runner = graphed_probe_runner if blocker is None else None  # auto measures the step as it will run
        encoder.use_precision(training_precision(config.dtype, encoder.device, encoder.model, graphed_runner=runner))
        if blocker is None and encoder.dtype == "fp16":  # asked for explicitly
            blocker = FP16_BLOCKER
        if config.cuda_graphs == "on" and blocker:
            raise ValueError(f"cuda_graphs: on, but {blocker}")
        if blocker is None:
            self.packed = True
            self.graphed = self.graphed_step(objective, parameters)
            return
        self.compile_forward(planned_steps)

    def graphed_step(self, objective: GraphableStep, parameters: list[nn.Parameter]) -> GraphedStep:
        """``objective``'s step as CUDA graphs over the packed pass (captured per batch shape on first sight)."""
        graphed_loss: GraphedLoss = objective.graphed_loss
        encoder_of_graphs = self.graphed_encoder()

        def loss_of(ids: torch.Tensor, mask: torch.Tensor, packing: Packing, *extras: torch.Tensor) -> torch.Tensor:
            return graphed_loss(ids, mask, PackedPass(packing, encoder_of_graphs), *extras)

        return GraphedStep(
            loss_of,
            parameters,
            self.encoder.device,
            self.encoder.dtype,
            copies=objective.graph_copies,
            cast_once=self.cast_once_model(objective),
        )

    def cast_once_model(self, objective: GraphableStep) -> nn.Module | None:
        """The model whose linear layers a reduced-precision step of ``objective`` casts once
        (:mod:`consert.train.cast_once`): the encoder's where the step makes one encoder pass, else None."""
        return self.encoder.model if objective.graph_passes == 1 else None

    def graphed_encoder(self) -> Callable[..., torch.Tensor]:
        """The packed encoder the CUDA graphs record: with each layer's per-token chain compiled into fused
        kernels under ``compile: on`` (:mod:`consert.train.fused`), as it is otherwise (``auto`` too, until a GPU
        has measured the fused step against it)."""
        if self.config.compile != "on":
            return packed_encoder
        self.compiled = True
        return fused_encoder()

    def compile_forward(self, planned_steps: int) -> None:
        """Train through a compiled forward when ``compile`` says so (``auto``: CUDA runs of
        :data:`COMPILE_MIN_STEPS` steps or more, where the compilation pays for itself): the packed
        encoder with its layers' per-token chain compiled (:mod:`consert.train.fused`: one compilation for
        every layer and token count, kept on disk), else the whole model (one graph per padded shape: CUDA
        batches are padded to multiples of 16). The dev evaluation and the export use the model itself."""
        wanted = self.config.compile
        if wanted == "auto":
            cuda = torch.device(self.encoder.device).type == "cuda"
            wanted = "on" if cuda and planned_steps >= COMPILE_MIN_STEPS else "off"
        if wanted != "on" or "adversarial" in self.config.views:  # FGV keeps a tensor of the pass: eager
            return
        if fault := fast_path_fault(self.encoder.model.config, "compile"):  # `on` was refused before any work
            self.eager_because.append(f"compile: {self.config.compile}: {fault}")
            return
        if self.packed:
            self.packed_encoder = fused_encoder()
        else:
            torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
            use_compile_cache()
            self.forward_model = torch.compile(self.encoder.model, dynamic=False)
        self.compiled = True

    def packed_pass(self, mask: torch.Tensor, copies: int = 2) -> PackedPass | None:
        """The packing of a batch's rows, ``copies`` times over (2: a contrastive batch's two views in one pass;
        1: a pass over the rows as they are), from the host copy of its mask; None when not packing."""
        if not self.packed:
            return None
        rows = mask.repeat(copies, 1) if copies > 1 else mask
        return PackedPass(Packing.of(rows).to(self.encoder.device), self.packed_encoder)

    def tokenized(self, texts: list[str]) -> DeviceBatch:
        """``texts`` padded (each tokenized once a run) and on the device, packed as one pass when packing."""
        ids, mask = self.encoder.tokens.batch(texts, self.encoder.pad_multiple)
        packed = self.packed_pass(mask, copies=1)
        device_ids, device_mask = to_device((ids, mask), self.encoder.device)
        return DeviceBatch(device_ids, device_mask, mask, packed)

    def release(self) -> None:
        """Free the graphs' memory now, not when the cycle collector finds it."""
        self.graphed = None

    def use_eager(self, why: str | None = None) -> None:
        """The step runs eagerly: padded, through the model itself, no graphs; with ``why``, from here on (a fast
        path that failed its self-check, :mod:`consert.train.self_check`), the record keeping why."""
        self.packed, self.packed_encoder, self.graphed = False, packed_encoder, None
        self.forward_model = self.encoder.model
        if why is not None:
            self.compiled = False
            self.eager_because.append(why)
