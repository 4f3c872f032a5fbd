"""BERT-flow (Li et al., 2020): a Glow flow fitted by maximum likelihood on frozen pooled vectors.

The flow maps a d-dimensional sentence vector (viewed as a d x 1 x 1 image) to a standard normal
latent. Each level is ``depth`` Glow steps (actnorm, invertible 1x1 convolution, additive
coupling with a ``width``-channel network) from ``normflows``; after every level but the last, half
of the channels leave as latent variables (multi-scale split), as in Glow. Similarity is computed
on the full latent vector. This module writes only the multi-level composition and the fitting
loop; the blocks are normflows'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .base import CachedPooledVectors


class MultiLevelGlow(nn.Module):
    """Glow on vectors: ``levels`` levels of ``depth`` steps, splitting half the channels between levels."""

    def __init__(self, dim: int, levels: int = 3, depth: int = 3, width: int = 32):
        super().__init__()
        import normflows

        if dim % (2**levels) != 0:
            raise ValueError(f"flow: dimension {dim} must be divisible by 2**levels = {2**levels}")
        self.dim, self.levels = dim, levels
        self.blocks = nn.ModuleList()
        channels = dim
        for _ in range(levels):
            steps = [normflows.flows.GlowBlock(channels, width, scale=False) for _ in range(depth)]
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
    """Frozen encoder + BERT-flow fitted on pooled vectors (paper: unlabeled STS texts, lr 1e-3, 1 epoch)."""

    def __init__(
        self,
        vectors: CachedPooledVectors,
        levels: int = 3,
        depth: int = 3,
        width: int = 32,
        lr: float = 1e-3,
        epochs: int = 1,
        batch_size: int = 32,
        seed: int = 1,
        progress: bool = True,
    ):
        self.vectors = vectors
        self.settings = dict(levels=levels, depth=depth, width=width, lr=lr, epochs=epochs, batch_size=batch_size)
        self.seed, self.progress = seed, progress
        self.flow: MultiLevelGlow | None = None
        self.history: list[float] = []
        self.name = f"flow[{vectors.pooling}]"

    def fit(self, texts: Sequence[str]) -> FlowBaseline:
        """Fit by maximum likelihood; ``history`` holds the mean log-likelihood per 1% of the steps."""
        torch.manual_seed(self.seed)
        data = torch.as_tensor(self.vectors(list(texts)), dtype=torch.float32)
        s = self.settings
        self.flow = MultiLevelGlow(data.shape[1], s["levels"], s["depth"], s["width"])
        optimizer = torch.optim.Adam(self.flow.parameters(), lr=s["lr"])
        generator = torch.Generator().manual_seed(self.seed)
        steps = math.ceil(len(data) / s["batch_size"]) * s["epochs"]
        report_every = max(1, steps // 100)
        running: list[float] = []
        bar = tqdm(total=steps, desc="fitting flow", unit="step", disable=not self.progress, leave=False)
        for _ in range(s["epochs"]):
            for batch in torch.randperm(len(data), generator=generator).split(s["batch_size"]):
                loss = -self.flow.log_likelihood(data[batch]).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running.append(-loss.item())
                if len(running) == report_every:
                    self.history.append(float(np.mean(running)))
                    running.clear()
                bar.update(1)
        bar.close()
        self.fit_texts = len(texts)
        return self

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        if self.flow is None:
            raise RuntimeError("fit the flow before encoding")
        with torch.no_grad():
            z, _ = self.flow(torch.as_tensor(self.vectors(sentences), dtype=torch.float32))
        return z.numpy()

    def describe(self) -> dict[str, object]:
        return {"method": self.name, **{f"flow_{k}": v for k, v in self.settings.items()}, **self.vectors.describe()}
