"""The interface every objective keeps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from consert.configs import ConfigError
from consert.data.inputs import ExternalInput
from consert.data.senteval import SentEvalData
from consert.train.config import TrainConfig

if TYPE_CHECKING:
    from consert.train.execution import StepExecution
    from consert.train.trained_encoder import TrainedEncoder
    from consert.train.views import PackedPass


class Objective:
    """One stage's objective over the encoder it is handed: its heads, its items and the loss of a batch."""

    #: The name a recipe gives it (``TrainConfig.objective``; :data:`consert.train.objectives.OBJECTIVES`).
    name: ClassVar[str] = ""
    #: The progress bar's name of the stage.
    label: ClassVar[str] = "unsup"
    #: What the objective is: whether its loss contrasts the texts of a batch (each text's negatives are the
    #: others'), and whether it trains on NLI labels. Its checks, the recipe card and the cost table ask these.
    is_contrastive: ClassVar[bool] = True
    is_supervised: ClassVar[bool] = False
    #: Why a step of this objective cannot run as CUDA graphs; None: it can.
    graphs_blocker: str | None = "this objective's step has no graph-safe loss (it stays eager or compiled)"
    #: How often the graphed step's packed pass repeats a batch's rows (2: two views in one pass).
    graph_copies: ClassVar[int] = 2
    #: The encoder passes the graphed step makes. With one, a bf16 step casts the linear layers once
    #: (:mod:`consert.train.cast_once`); with more, each use's gradient would be summed in bf16, not fp32 as
    #: autocast sums them, so the step keeps autocast's per-use casts.
    graph_passes: ClassVar[int] = 1

    @classmethod
    def check(cls, config: TrainConfig) -> None:
        """A one-line :class:`ConfigError` where ``config`` cannot train this objective (before any work): a
        contrastive batch needs negatives, the other texts of the batch."""
        if not cls.is_contrastive:
            return
        if config.batch_size < 2:
            raise ConfigError(
                f"batch_size: a contrastive batch needs at least 2 texts (each text's negatives are the others'), "
                f"got {config.batch_size}"
            )
        if config.n_texts == 1 and not config.upsample:
            raise ConfigError(
                "n_texts: one text without upsampling gives batches of one row, without a negative; "
                "upsample (main.py's --do_upsampling: copies whose views are drawn per row) or use 2 or more"
            )

    @classmethod
    def inputs(cls, config: TrainConfig) -> list[ExternalInput]:
        """What ``config``'s stage of this objective reads beyond the STS sets (files, WordNet, a spaCy pipeline):
        checked before any work, by ``consert train`` and at the workflow's start."""
        return []

    def __init__(self, config: TrainConfig, encoder: TrainedEncoder, execution: StepExecution):
        self.config, self.encoder, self.execution = config, encoder, execution
        #: Per text augmentation, how often it was drawn and how often it changed the text (AugCSE).
        self.augmentation_rates: dict[str, dict[str, float]] = {}

    def heads(self) -> list[nn.Module]:
        """The training-only modules whose parameters the optimiser updates besides the encoder's."""
        return []

    def training_items(self, data: SentEvalData, progress: bool) -> list[Any]:
        """What a batch is drawn from (texts, NLI pairs or augmented texts)."""
        raise NotImplementedError

    def prefill(self, items: list[Any], planned_items: int) -> None:
        """Tokenize the items' texts at once when the run will see them all."""

    def loss(self, batch: list[Any]) -> torch.Tensor:
        """The loss of one batch of items."""
        raise NotImplementedError

    def rows_loss(self, rows: list[str], *extras: torch.Tensor) -> torch.Tensor:
        """The loss of a step that is one pass over ``rows`` (each once; ``extras``: its other inputs, on the host):
        a replay of the step's CUDA graph, which also writes the gradients, when the step is graphed; else
        :meth:`graphed_loss` of the tokenized rows."""
        encoder, execution = self.encoder, self.execution
        if execution.graphed is not None:
            ids, mask = encoder.tokens.batch(rows, encoder.pad_multiple)
            return execution.graphed(ids, mask, *extras)
        tokens = execution.tokenized(rows)
        return self.graphed_loss(tokens.ids, tokens.mask, tokens.packed, *(e.to(encoder.device) for e in extras))

    def graphed_loss(
        self, ids: torch.Tensor, mask: torch.Tensor, packed: PackedPass, *extras: torch.Tensor
    ) -> torch.Tensor:
        """The loss of a tokenized batch with no host reads, for a CUDA graph (only where graphs apply);
        ``extras``: the step's other device inputs (the NLI labels)."""
        raise NotImplementedError(self.graphs_blocker)

    def record(self) -> dict[str, Any]:
        """What the training record says of the objective's data."""
        return {"nli": None}
