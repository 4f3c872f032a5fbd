"""BERT-flow (Li et al., 2020): a Glow fitted by maximum likelihood on frozen pooled sentence vectors.

This is bohanli/BERT-flow's flow (``flow/glow_1x1.py``, ``flow/glow_ops_1x1.py`` with
``config_l3_d3_w32.json``), written in torch from its equations. A d-dimensional vector is an
image of one pixel with d channels, so every 1x1 convolution is a dense layer on the channels:

* a **step** (data to latent) is ActNorm, a fixed channel reversal, an additive coupling;
* **ActNorm**: ``y = (x + b) * exp(3 s)``, log-determinant ``3 * sum(s)``. The reference never runs its
  data-dependent initialisation (``run_siamese.py`` passes no ``GlowInitHook`` to the estimator), so
  ``b`` and ``s`` keep their variables' initial values: TF1's default Glorot-uniform for an unset
  initializer on a (1, 1, 1, C) variable, ``U(-a, a)`` with ``a = sqrt(6 / (1 + C))``;
* **additive coupling**: the first half ``x1`` passes through and conditions, the second is shifted,
  ``z2 = x2 + NN(x1)``, log-determinant 0. ``NN`` is dense (no bias, weights ``N(0, 0.05)``) ->
  ActNorm -> ReLU, twice (width 32), then a zero-initialised dense layer with bias, scaled by
  ``exp(3 s)`` (``s`` zero): each coupling starts as the identity;
* **levels**: after each level but the last the second half of the channels leaves the flow (the
  transformed half, scored under a standard normal) and the first half goes on; no squeeze;
* **latent**: the leaving halves in order, then the last level's output, concatenated (d values);
  similarity is the cosine of latents;
* **objective**: bits per dimension, ``L = -(log det + log N(z; 0, I)) / (d ln 2)`` per sentence, and a
  step minimises ``mean_a L + mean_b L`` over its 32 pairs (here: twice the mean over its 64 sentences).

Fitting follows ``optimization_bert_flow.py``: AdamWeightDecay without bias correction (eps 1e-6)
and weight decay 0.01 on every flow variable (none of the reference's variable names is excluded),
constant lr 1e-3, global-norm clip 1.0, 64 sentences a step, the last partial batch dropped (the
reference's ``drop_remainder``), one epoch, the encoder's dropout on while fitting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .base import BaselineOptions, CachedPooledVectors
from .flow_settings import FlowSettings

#: The reference scales every log-scale parameter by 3 (``logscale_factor=3.`` in its actnorm and zero conv).
LOGSCALE_FACTOR = 3.0
#: Standard deviation of the coupling network's hidden weights (the reference's ``default_initializer``).
HIDDEN_INIT_STD = 0.05


def glorot_bound(channels: int) -> float:
    """TF1's Glorot-uniform bound for a (1, 1, 1, C) variable: fan in 1, fan out C."""
    return math.sqrt(6.0 / (1 + channels))


class ActNorm(nn.Module):
    """``(x + b) * exp(3 s)`` per channel; ``b`` and ``s`` start Glorot-uniform (no data-dependent init)."""

    def __init__(self, channels: int):
        super().__init__()
        bound = glorot_bound(channels)
        self.b = nn.Parameter(torch.empty(channels).uniform_(-bound, bound))
        self.logs = nn.Parameter(torch.empty(channels).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(y, log|det|)``; the log-determinant is the same for every row."""
        log_scale = LOGSCALE_FACTOR * self.logs
        return (x + self.b) * torch.exp(log_scale), log_scale.sum()

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y * torch.exp(-LOGSCALE_FACTOR * self.logs) - self.b


class CouplingNet(nn.Module):
    """The shift network: dense -> ActNorm -> ReLU twice, then a zero-initialised dense layer scaled by exp(3 s)."""

    def __init__(self, channels: int, width: int):
        super().__init__()
        self.hidden1 = nn.Linear(channels, width, bias=False)
        self.hidden2 = nn.Linear(width, width, bias=False)
        for layer in (self.hidden1, self.hidden2):
            nn.init.normal_(layer.weight, std=HIDDEN_INIT_STD)
        self.norm1, self.norm2 = ActNorm(width), ActNorm(width)  # their log-determinants are not part of the flow's
        self.out = nn.Linear(width, channels)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)
        self.out_logs = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm1(self.hidden1(x))[0])
        h = torch.relu(self.norm2(self.hidden2(h))[0])
        return self.out(h) * torch.exp(LOGSCALE_FACTOR * self.out_logs)


class FlowStep(nn.Module):
    """ActNorm, channel reversal, additive coupling (data to latent)."""

    def __init__(self, channels: int, width: int):
        super().__init__()
        self.actnorm = ActNorm(channels)
        self.net = CouplingNet(channels // 2, width)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, log_det = self.actnorm(x)
        h = h.flip(-1)
        kept, shifted = h.chunk(2, dim=-1)
        return torch.cat([kept, shifted + self.net(kept)], dim=-1), log_det

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        kept, shifted = z.chunk(2, dim=-1)
        h = torch.cat([kept, shifted - self.net(kept)], dim=-1)
        return self.actnorm.inverse(h.flip(-1))


class Glow(nn.Module):
    """``levels`` levels of ``depth`` steps; between levels the second half of the channels leaves."""

    def __init__(self, dim: int, levels: int = 3, depth: int = 3, width: int = 32):
        super().__init__()
        if dim % (2**levels) != 0:
            raise ValueError(f"flow: dimension {dim} must be divisible by 2**levels = {2**levels}")
        self.dim, self.levels = dim, levels
        self.blocks = nn.ModuleList(
            nn.ModuleList(FlowStep(dim // 2**level, width) for _ in range(depth)) for level in range(levels)
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Map data x (N x d) to latent z (N x d); return z and log|det dz/dx| per row."""
        h = x
        log_det = torch.zeros(len(x), device=x.device, dtype=x.dtype)
        leaving = []
        for level, steps in enumerate(self.blocks):
            for step in steps:
                h, step_log_det = step(h)
                log_det = log_det + step_log_det
            if level < self.levels - 1:
                h, out = h.chunk(2, dim=-1)
                leaving.append(out)
        return torch.cat([*leaving, h], dim=-1), log_det

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        """Map latent z (N x d) back to data x."""
        sizes = [self.dim // 2 ** (level + 1) for level in range(self.levels - 1)]
        parts = list(z.split([*sizes, self.dim - sum(sizes)], dim=-1))
        h = parts.pop()
        for level in reversed(range(self.levels)):
            if level < self.levels - 1:
                h = torch.cat([h, parts.pop()], dim=-1)
            for step in reversed(self.blocks[level]):
                h = step.inverse(h)
        return h

    def log_likelihood(self, x: torch.Tensor) -> torch.Tensor:
        """log p(x) per row (nats) under the standard normal prior on z."""
        z, log_det = self(x)
        return -0.5 * (z**2).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi) + log_det

    def bits_per_dim(self, x: torch.Tensor) -> torch.Tensor:
        """The reference's per-sentence objective: -log p(x) / (d ln 2)."""
        return -self.log_likelihood(x) / (self.dim * math.log(2))


class FlowBaseline:
    """Frozen encoder + BERT-flow fitted on pooled vectors, as :class:`FlowSettings` say (the authors' by default)."""

    def __init__(
        self, vectors: CachedPooledVectors, settings: FlowSettings | None = None, seed: int = 1, progress: bool = True
    ):
        self.vectors = vectors
        self.settings = settings or FlowSettings()
        self.seed, self.progress = seed, progress
        self.flow: Glow | None = None
        self.history: list[float] = []
        self.name = f"flow[{vectors.pooling}]"

    @classmethod
    def build(cls, vectors: CachedPooledVectors | None, options: BaselineOptions) -> FlowBaseline:
        """The registry's construction (:data:`baselines.BASELINE_SPECS`): the pooled vectors and the flow's
        settings (the authors' when None), with the default seed."""
        return cls(vectors, options.settings, progress=options.progress)

    def _batch_vectors(self, texts: list[str]) -> torch.Tensor:
        if self.settings.encoder_dropout:
            matrix = self.vectors.encoder.encode(texts, self.vectors.pooling, progress=False, dropout=True)
        else:
            matrix = self.vectors(texts)
        return torch.as_tensor(matrix, dtype=torch.float32)

    def fit(self, texts: Sequence[str]) -> FlowBaseline:
        """Fit a new flow; ``history`` holds the mean bits per dimension per 1% of the steps."""
        from consert.train.optim import AdamW

        torch.manual_seed(self.seed)
        texts = list(texts)
        s = self.settings
        dim = self.vectors(texts[:1]).shape[1]
        self.flow = Glow(dim, s.levels, s.depth, s.width)
        optimizer = AdamW(
            self.flow.parameters(),
            lr=s.lr,
            eps=1e-6,
            weight_decay=s.weight_decay,
            correct_bias=False,
            decay_first=True,  # BERT-flow's AdamWeightDecayOptimizer decays the pre-update weights
        )
        generator = torch.Generator().manual_seed(self.seed)
        per_epoch = len(texts) // s.batch_size  # the last partial batch is dropped, as the reference's
        if per_epoch == 0:
            raise ValueError(
                f"flow: {len(texts)} texts make no full batch of {s.batch_size} (the reference drops the last "
                "partial batch): fit on more texts or lower batch_size"
            )
        report_every = max(1, per_epoch * s.epochs // 100)
        self.history, running = [], []
        bar = tqdm(total=per_epoch * s.epochs, desc="fitting flow", unit="step", disable=not self.progress, leave=False)
        for _ in range(s.epochs):
            order = torch.randperm(len(texts), generator=generator)[: per_epoch * s.batch_size]
            for batch in order.split(s.batch_size):
                bits = self.flow.bits_per_dim(self._batch_vectors([texts[i] for i in batch]))
                loss = 2 * bits.mean()  # mean_a + mean_b over the step's pairs
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.flow.parameters(), s.max_grad_norm)
                optimizer.step()
                running.append(bits.mean().item())
                if len(running) == report_every:
                    self.history.append(float(np.mean(running)))
                    running.clear()
                bar.update(1)
        bar.close()
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        if self.flow is None:
            raise RuntimeError("fit the flow before encoding")
        with torch.no_grad():
            z, _ = self.flow(torch.as_tensor(self.vectors(sentences), dtype=torch.float32))
        return z.numpy()

    def describe(self) -> dict[str, object]:
        settings = {f"flow_{name}": value for name, value in self.settings.model_dump().items()}
        return {"method": self.name, **settings, **self.vectors.describe()}
