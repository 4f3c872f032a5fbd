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

``decay_first=True`` decays the weights as they were before the update, as BERT's (and BERT-flow's)
``AdamWeightDecayOptimizer``: ``p -= lr * (m / (sqrt(v) + eps) + weight_decay * p)``.

With ``correct_bias=True`` it matches ``torch.optim.AdamW`` up to where ``eps`` is added (a test).
The update runs as multi-tensor operations (``torch._foreach_*``, as ``torch.optim``'s own foreach
implementations): on a GPU a step is a handful of kernel launches instead of several per parameter.

Without bias correction (the authors' ConSERT update) CUDA runs use :func:`fused_adamw` instead:
``torch.optim.AdamW(fused=True)``, one pass over each parameter, its gradient and its two moments
(about 3 GB of memory traffic a step for BERT-base, against about 10 GB for the multi-tensor version,
which reads and writes every tensor once per operation), with its step counts started at
:data:`UNCORRECTED_STEP`, where ``beta ** step`` underflows to 0, so both corrections are exactly 1.
One difference remains, below float32 rounding: torch decays the weights before the Adam update and
transformers 3.4 after it, which changes a weight by ``lr^2 * weight_decay * |update|`` (2.5e-15 at
the authors' lr 5e-7; a test). With bias correction the two are not the same update (torch adds
``eps`` after dividing by the correction, transformers before), so bias-corrected recipes (SimCSE,
SG-OPT) keep the multi-tensor version.
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
        decay_first: bool = False,
    ):
        if lr <= 0 or eps < 0 or weight_decay < 0 or not all(0 <= beta < 1 for beta in betas):
            raise ValueError(f"invalid AdamW settings: lr={lr}, betas={betas}, eps={eps}, weight_decay={weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "correct_bias": correct_bias,
                    "decay_first": decay_first}  # fmt: skip
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient: the per-tensor arithmetic above, done with
        multi-tensor (``torch._foreach_*``) operations, a few kernel launches for all parameters at once."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            beta1, beta2 = group["betas"]
            for param in params:
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param)
                    state["exp_avg_sq"] = torch.zeros_like(param)
                state["step"] += 1
            grads = [p.grad for p in params]
            exp_avgs = [self.state[p]["exp_avg"] for p in params]
            exp_avg_sqs = [self.state[p]["exp_avg_sq"] for p in params]
            torch._foreach_mul_(exp_avgs, beta1)
            torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
            denominators = torch._foreach_sqrt(exp_avg_sqs)
            torch._foreach_add_(denominators, group["eps"])
            decay = group["weight_decay"] > 0
            if decay and group.get("decay_first", False):  # on the weights before the update (BERT's order)
                torch._foreach_add_(params, params, alpha=-group["lr"] * group["weight_decay"])
                decay = False
            if group["correct_bias"]:  # each parameter's own step count (one may have had no gradient before)
                steps = [self.state[p]["step"] for p in params]
                sizes = [-group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t) for t in steps]
                torch._foreach_addcdiv_(params, exp_avgs, denominators, sizes)
            else:
                torch._foreach_addcdiv_(params, exp_avgs, denominators, value=-group["lr"])
            if decay:
                torch._foreach_add_(params, params, alpha=-group["lr"] * group["weight_decay"])
        return loss


#: A step count at which Adam's bias corrections are exactly 1 in floating point (``0.9 ** 1e9`` and
#: ``0.999 ** 1e9`` underflow to 0); float32 keeps it there (1e9 + 1 rounds back to 1e9).
UNCORRECTED_STEP = 1e9


def fused_adamw(
    groups: list[dict], lr: float, betas: tuple[float, float], eps: float, correct_bias: bool
) -> torch.optim.AdamW:
    """``torch.optim.AdamW(fused=True)`` over parameter ``groups`` (each with its own ``weight_decay``,
    else none); ``correct_bias=False``: its state starts at :data:`UNCORRECTED_STEP`, the authors'
    update. With ``correct_bias=True`` it is torch's update (``eps`` added after the correction)."""
    optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=0.0, fused=True)
    if not correct_bias:
        for group in optimizer.param_groups:
            for param in group["params"]:
                optimizer.state[param] = {  # the layout torch's fused AdamW creates itself on a first step
                    "step": torch.tensor(UNCORRECTED_STEP, dtype=torch.float32, device=param.device),
                    "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
                }
    return optimizer
