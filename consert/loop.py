"""The optimisation loop shared by ConSERT and SG-OPT training.

AdamW (no weight decay on biases and LayerNorm weights) with linear warm-up and decay over the
planned steps, gradient clipping, dev evaluation every ``eval_every`` steps, the best state kept in
memory and restored at the end, early stopping after ``patience`` evaluations without a gain, and a
stop with a clear message on a non-finite loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from tqdm.auto import tqdm

from .encode import autocast


class TrainingFault(RuntimeError):
    """Training produced a non-finite loss or a collapsed embedding; nothing is exported."""


@dataclass(frozen=True)
class LoopSettings:
    """Optimiser, schedule and evaluation settings of one training stage."""

    lr: float
    batch_size: int
    epochs: int
    max_steps: int | None
    warmup_ratio: float
    weight_decay: float
    adam_eps: float
    max_grad_norm: float
    eval_every: int
    patience: int
    eval_at_start: bool
    seed: int
    dtype: str
    betas: tuple[float, float] = (0.9, 0.999)

    def planned_steps(self, n_items: int) -> int:
        """Steps of ``epochs`` passes over ``n_items``, capped by ``max_steps``."""
        steps = self.epochs * math.ceil(n_items / self.batch_size)
        return steps if self.max_steps is None else min(self.max_steps, steps)


@dataclass
class LoopResult:
    """How the loop went: best step and dev score, steps run and planned, the per-step log."""

    best_step: int
    best_dev: float
    steps: int
    planned: int
    log: list[dict]


def adamw(parameters: Sequence[tuple[str, nn.Parameter]], settings: LoopSettings) -> torch.optim.AdamW:
    """AdamW with weight decay on everything but biases and LayerNorm weights (as BERT/SBERT)."""
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    trainable = [(n, p) for n, p in parameters if p.requires_grad]
    groups = [
        {
            "params": [p for n, p in trainable if not any(k in n for k in no_decay)],
            "weight_decay": settings.weight_decay,
        },
        {"params": [p for n, p in trainable if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=settings.lr, eps=settings.adam_eps, betas=settings.betas)


def run_loop(
    model: nn.Module,
    parameters: Sequence[tuple[str, nn.Parameter]],
    items: Sequence,
    loss_fn: Callable[[list], torch.Tensor],
    dev_fn: Callable[[], float],
    settings: LoopSettings,
    device: str,
    desc: str = "train",
    progress: bool = True,
) -> LoopResult:
    """Minimise ``loss_fn(batch)`` over shuffled batches of ``items``; ``model`` ends at its best dev state."""
    from transformers import get_linear_schedule_with_warmup

    planned = settings.planned_steps(len(items))
    optimizer = adamw(parameters, settings)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * planned), planned)
    order = torch.Generator().manual_seed(settings.seed)
    trainable = [p for _, p in parameters if p.requires_grad]
    log: list[dict] = []
    best: dict = {"step": 0, "dev": -math.inf, "state": None}
    misses = 0
    started = time.perf_counter()
    status: dict[str, str] = {}
    bar = tqdm(total=planned, desc=desc, unit="step", disable=not progress)

    def evaluate(step: int) -> bool:
        """Score on dev, keep the best state; True when patience is exhausted."""
        nonlocal misses
        score = dev_fn()
        log.append({"step": step, "dev_spearman": score, "seconds": time.perf_counter() - started})
        if score > best["dev"]:
            state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            best.update(step=step, dev=score, state=state)
            misses = 0
        else:
            misses += 1
        status.update(dev=f"{score:.2f}", best=f"{best['dev']:.2f}")
        bar.set_postfix(status)
        return misses >= settings.patience

    stop = settings.eval_at_start and evaluate(0)
    step = 0
    model.train()
    while step < planned and not stop:
        permutation = torch.randperm(len(items), generator=order).tolist()
        for start in range(0, len(items), settings.batch_size):
            with autocast(device, settings.dtype):
                loss = loss_fn([items[i] for i in permutation[start : start + settings.batch_size]])
            step += 1
            if not torch.isfinite(loss):
                bar.close()
                raise TrainingFault(f"step {step}: loss is {loss.item()} (non-finite); stopping without export")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, settings.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            seconds = time.perf_counter() - started
            log.append({"step": step, "loss": loss.item(), "lr": scheduler.get_last_lr()[0], "seconds": seconds})
            status["loss"] = f"{loss.item():.4f}"
            bar.set_postfix(status, refresh=False)
            bar.update(1)
            if step % settings.eval_every == 0 or step == planned:
                stop = evaluate(step)
            if stop or step >= planned:
                break
    bar.close()
    if best["state"] is None:
        raise TrainingFault("no dev evaluation was run; set eval_at_start or eval_every <= the planned steps")
    model.load_state_dict(best["state"])
    return LoopResult(best["step"], best["dev"], step, planned, log)
