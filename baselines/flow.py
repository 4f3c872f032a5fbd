"""BERT-flow (Li et al., 2020): a Glow flow fitted by maximum likelihood on frozen pooled vectors.

The flow maps a d-dimensional sentence vector (viewed as a d x 1 x 1 image) to a standard normal
latent. Each level is ``depth`` Glow steps from ``normflows`` (actnorm, a channel permutation, an
additive coupling whose network is conv-actnorm-ReLU twice and a zero-initialised conv, ``width``
channels); after every level but the last, half of the channels leave as latent variables
(multi-scale split, no squeeze). Similarity is computed on the full latent vector. As the authors'
``config_l3_d3_w32.json``: 3 levels, depth 3, width 32, additive coupling, and a fixed channel
reversal as the permutation (``permutation="conv1x1"`` gives Glow's learned LU 1x1 convolution).
Fitting follows their ``optimization_bert_flow.py``: AdamWeightDecay (no bias correction, weight
decay 0.01 off biases, eps 1e-6), constant lr 1e-3, global-norm clip 1.0, 64 sentences a step, the
encoder's dropout on. This module writes only the composition and the fitting loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .base import CachedPooledVectors

PERMUTATIONS = ("reverse", "conv1x1")


def reversal(channels: int) -> nn.Module:
    """normflows' permutation flow with its permutation fixed to channel reversal (BERT-flow's)."""
    import normflows

    flow = normflows.flows.Permute(channels, mode="shuffle")
    reverse = torch.arange(channels - 1, -1, -1)
    flow.perm.copy_(reverse)
    flow.inv_perm.copy_(reverse)  # reversal is its own inverse
    return flow


class MultiLevelGlow(nn.Module):
    """Glow on vectors: ``levels`` levels of ``depth`` steps, splitting half the channels between levels."""

    def __init__(self, dim: int, levels: int = 3, depth: int = 3, width: int = 32, permutation: str = "reverse"):
        super().__init__()
        import normflows

        if dim % (2**levels) != 0:
            raise ValueError(f"flow: dimension {dim} must be divisible by 2**levels = {2**levels}")
        if permutation not in PERMUTATIONS:
            raise ValueError(f"flow: permutation must be one of {PERMUTATIONS}, got {permutation!r}")
        self.dim, self.levels = dim, levels
        self.blocks = nn.ModuleList()
        channels = dim
        for _ in range(levels):
            steps = []
            for _ in range(depth):
                step = normflows.flows.GlowBlock(channels, width, scale=False, net_actnorm=True)
                if permutation == "reverse":  # flows run coupling, permutation, actnorm (generative order)
                    step.flows[1] = reversal(channels)
                steps.append(step)
            self.blocks.append(nn.ModuleList(steps))
            channels //= 2

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Map data x (N x d) to latent z (N x d); return z and log|det dz/dx| per row."""
        h = x.reshape(len(x), self.dim, 1, 1)
        log_det = torch.zeros(len(x), device=x.device)
        latents = []
        for level, steps in enumerate(self.blocks):
            for step in steps:
                h, step_log_det = step.inverse(h)  # normflows: inverse = data -> latent
                log_det = log_det + step_log_det
            if level < self.levels - 1:
                leaving, h = h.chunk(2, dim=1)
                latents.append(leaving)
        latents.append(h)
        return torch.cat(latents, dim=1).reshape(len(x), self.dim), log_det

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        """Map latent z (N x d) back to data x."""
        z = z.reshape(len(z), self.dim, 1, 1)
        sizes = [self.dim // 2 ** (level + 1) for level in range(self.levels - 1)]
        sizes.append(self.dim - sum(sizes))
        parts = list(z.split(sizes, dim=1))
        h = parts.pop()
        for level in reversed(range(self.levels)):
            if level < self.levels - 1:
                h = torch.cat([parts.pop(), h], dim=1)
            for step in reversed(self.blocks[level]):
                h, _ = step.forward(h)
        return h.reshape(len(z), self.dim)

    def log_likelihood(self, x: torch.Tensor) -> torch.Tensor:
        """log p(x) per row under the standard normal prior on z."""
        z, log_det = self(x)
        return -0.5 * (z**2).sum(1) - 0.5 * self.dim * math.log(2 * math.pi) + log_det


class FlowBaseline:
    """Frozen encoder + BERT-flow fitted on pooled vectors (defaults: the authors' settings, above).

    ``encoder_dropout``: encode every fitting batch afresh with the encoder's dropout on, as the
    authors' estimator did (costly: one encoder pass per fitted sentence); off, the fit reads the
    cached dropout-free vectors.
    """

    def __init__(
        self,
        vectors: CachedPooledVectors,
        levels: int = 3,
        depth: int = 3,
        width: int = 32,
        permutation: str = "reverse",
        lr: float = 1e-3,
        weight_decay: float = 0.01,
        max_grad_norm: float = 1.0,
        epochs: int = 1,
        batch_size: int = 64,
        encoder_dropout: bool = True,
        seed: int = 1,
        progress: bool = True,
    ):
        self.vectors = vectors
        self.settings = dict(
            levels=levels,
            depth=depth,
            width=width,
            permutation=permutation,
            lr=lr,
            weight_decay=weight_decay,
            max_grad_norm=max_grad_norm,
            epochs=epochs,
            batch_size=batch_size,
            encoder_dropout=encoder_dropout,
        )
        self.seed, self.progress = seed, progress
        self.flow: MultiLevelGlow | None = None
        self.history: list[float] = []
        self.name = f"flow[{vectors.pooling}]"

    def _batch_vectors(self, texts: list[str]) -> torch.Tensor:
        if self.settings["encoder_dropout"]:
            matrix = self.vectors.encoder.encode(texts, self.vectors.pooling, progress=False, dropout=True)
        else:
            matrix = self.vectors(texts)
        return torch.as_tensor(matrix, dtype=torch.float32)

    def fit(self, texts: Sequence[str]) -> FlowBaseline:
        """Fit a new flow by maximum likelihood; ``history`` holds the mean log-likelihood per 1% of the steps."""
        from consert.optim import AdamW

        torch.manual_seed(self.seed)
        texts = list(texts)
        s = self.settings
        dim = self.vectors(texts[:1]).shape[1]
        self.flow = MultiLevelGlow(dim, s["levels"], s["depth"], s["width"], s["permutation"])
        decay = [p for n, p in self.flow.named_parameters() if "bias" not in n]
        no_decay = [p for n, p in self.flow.named_parameters() if "bias" in n]
        groups = [{"params": decay, "weight_decay": s["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
        optimizer = AdamW(groups, lr=s["lr"], eps=1e-6, correct_bias=False)
        generator = torch.Generator().manual_seed(self.seed)
        steps = math.ceil(len(texts) / s["batch_size"]) * s["epochs"]
        report_every = max(1, steps // 100)
        self.history, running = [], []
        bar = tqdm(total=steps, desc="fitting flow", unit="step", disable=not self.progress, leave=False)
        for _ in range(s["epochs"]):
            for batch in torch.randperm(len(texts), generator=generator).split(s["batch_size"]):
                loss = -self.flow.log_likelihood(self._batch_vectors([texts[i] for i in batch])).mean()
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.flow.parameters(), s["max_grad_norm"])
                optimizer.step()
                running.append(-loss.item())
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
        return {"method": self.name, **{f"flow_{k}": v for k, v in self.settings.items()}, **self.vectors.describe()}
