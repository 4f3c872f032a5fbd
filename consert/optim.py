"""AdamW with optional bias correction, as the ConSERT authors trained.

The authors' code builds ``transformers.AdamW(params, lr, eps=1e-6, weight_decay=0.01,
correct_bias=False)`` (transformers 3.4). That class is gone from transformers 5 and
``torch.optim.AdamW`` always corrects the bias, which makes the early updates 1.1-6.5x smaller
over the first ~1.5k steps, the window where the paper's best checkpoints lie. This optimizer
computes the same update as that class:

    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
    p -= lr_t * m / (sqrt(v) + eps),  lr_t = lr                                  (correct_bias=False)
                                      lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)       (correct_bias=True)
    p -= lr * weight_decay * p                                                   (decoupled decay)

With ``correct_bias=True`` it matches ``torch.optim.AdamW`` up to where ``eps`` is added (a test).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class AdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay; ``correct_bias=False`` reproduces the ConSERT authors' optimizer."""

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        correct_bias: bool = True,
    ):
        if lr <= 0 or eps < 0 or weight_decay < 0 or not all(0 <= beta < 1 for beta in betas):
            raise ValueError(f"invalid AdamW settings: lr={lr}, betas={betas}, eps={eps}, weight_decay={weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "correct_bias": correct_bias}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param)
                    state["exp_avg_sq"] = torch.zeros_like(param)
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(param.grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(param.grad, param.grad, value=1 - beta2)
                step_size = group["lr"]
                if group["correct_bias"]:
                    step = state["step"]
                    step_size *= math.sqrt(1 - beta2**step) / (1 - beta1**step)
                param.addcdiv_(exp_avg, exp_avg_sq.sqrt().add_(group["eps"]), value=-step_size)
                if group["weight_decay"] > 0:
                    param.add_(param, alpha=-group["lr"] * group["weight_decay"])
        return loss
