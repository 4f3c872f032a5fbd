"""The optimisation loop shared by ConSERT and SG-OPT training.

AdamW (no weight decay on biases and LayerNorm weights; optionally without bias correction, as the
ConSERT authors; then torch's fused kernel on CUDA) with linear warm-up and decay over the planned steps,
gradient clipping, dev evaluations on a grid (:func:`evaluation_grid`), the best state kept in
memory and restored at the end, early stopping after ``patience`` evaluations without a strict
gain, and a stop with a clear message on a non-finite loss.

Precision: ``dtype`` arrives resolved (:func:`consert.encode.precision.training_precision`); fp16 trains
under a gradient scaler, as the authors' apex O1 did. On CUDA the per-step
losses stay on the device and are read back every ``sync_every`` steps (and at each evaluation), so
a step does not wait for the host; on a CPU that read is free and happens every step.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import torch
from torch import nn
from tqdm.auto import tqdm

from consert.encode.precision import RESOLVED_DTYPES, autocast
from consert.train.optim import AdamW, fused_adamw

if TYPE_CHECKING:  # a hint only: the loop runs any step, graphed or not
    from consert.train.graphs import GraphedStep
    from consert.train.resume import Checkpointing

#: Steps between reads of the loss from a CUDA device (logging and the non-finite check).
CUDA_SYNC_EVERY = 50


def read_interval(device: str) -> int:
    """Steps between two reads of the loss on ``device``: :data:`CUDA_SYNC_EVERY` on CUDA, every step elsewhere."""
    return CUDA_SYNC_EVERY if torch.device(device).type == "cuda" else 1


class TrainingFault(RuntimeError):
    """Training produced a non-finite loss or a collapsed embedding; nothing is exported. A fault raised by a
    dev evaluation carries the steps' log so far (``log``)."""

    log: list[dict] | None = None


def loop_settings(config: object, dtype: str, **fixed: object) -> LoopSettings:
    """The loop's settings for a training config (ConSERT's and the family's, or SG-OPT's): every
    :class:`LoopSettings` field the config has under the same name, then ``fixed`` (what the method fixes or
    names otherwise), with the resolved ``dtype``."""
    values = {f.name: getattr(config, f.name) for f in fields(LoopSettings) if hasattr(config, f.name)}
    return LoopSettings(**{**values, "dtype": dtype, **fixed})


def planned_step_count(n_items: int, batch_size: int, epochs: int, max_steps: int | None) -> int:
    """Steps of ``epochs`` passes over ``n_items`` in batches of ``batch_size``, capped by ``max_steps``."""
    steps = epochs * math.ceil(n_items / batch_size)
    return steps if max_steps is None else min(max_steps, steps)


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
    patience: int | None
    eval_at_start: bool
    seed: int
    dtype: str
    betas: tuple[float, float] = (0.9, 0.999)
    bias_correction: bool = True
    eval_grid: str = "global"
    #: ``since_best``: patience counts evaluations since the best one (the ConSERT authors' fit);
    #: ``declines``: evaluations scoring below the previous one, never reset (SG-BERT's fit).
    patience_counts: str = "since_best"
    #: ``best``: end at the best dev state (ConSERT); ``last``: keep the state training stopped in (SG-BERT).
    final_state: str = "best"

    def planned_steps(self, n_items: int) -> int:
        """Steps of ``epochs`` passes over ``n_items``, capped by ``max_steps``."""
        return planned_step_count(n_items, self.batch_size, self.epochs, self.max_steps)


def evaluation_grid(n_items: int, settings: LoopSettings) -> Counter[int]:
    """How many dev evaluations follow each global step (1-based).

    ``epoch`` (the authors' sentence-transformers ``fit``): steps are counted within each epoch and
    the dev set is scored every ``eval_every`` of them and again at the end of every epoch, so an
    epoch whose length is a multiple of ``eval_every`` ends with two evaluations of the same model
    (both count towards patience). ``global``: every ``eval_every`` steps. Both: after the last
    planned step when ``max_steps`` cuts the run short.
    """
    per_epoch = math.ceil(n_items / settings.batch_size)
    planned = settings.planned_steps(n_items)
    grid: Counter[int] = Counter()
    if settings.eval_grid == "epoch":
        for epoch in range(settings.epochs):
            grid.update(
                epoch * per_epoch + step for step in range(settings.eval_every, per_epoch + 1, settings.eval_every)
            )
            grid[(epoch + 1) * per_epoch] += 1
    elif settings.eval_grid == "global":
        grid.update(range(settings.eval_every, planned + 1, settings.eval_every))
    else:
        raise ValueError(f"eval_grid: expected 'epoch' or 'global', got {settings.eval_grid!r}")
    grid = Counter({step: count for step, count in grid.items() if step <= planned})
    if planned not in grid:
        grid[planned] = 1
    return grid


@dataclass
class LoopResult:
    """How the loop went: best step and dev score, steps run and planned, the per-step log, and the
    step and dev score of the state the model ends in (the best one, or the last with ``final_state="last"``)."""

    best_step: int
    best_dev: float
    steps: int
    planned: int
    log: list[dict]
    final_step: int
    final_dev: float
    #: seconds spent capturing the CUDA graphs of the first ``capture_steps`` batches before the loop (a benchmark's)
    captured_ahead_s: float = 0.0


def adamw(
    parameters: Sequence[tuple[str, nn.Parameter]], settings: LoopSettings, fused: bool = False
) -> torch.optim.Optimizer:
    """AdamW with weight decay on everything but biases and LayerNorm weights (as BERT/SBERT); ``fused``
    (CUDA): torch's one-pass kernel (:func:`consert.train.optim.fused_adamw`) where it is the same update,
    without bias correction (with it, torch adds ``eps`` after the correction, the authors before)."""
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    trainable = [(n, p) for n, p in parameters if p.requires_grad]
    groups = [
        {
            "params": [p for n, p in trainable if not any(k in n for k in no_decay)],
            "weight_decay": settings.weight_decay,
        },
        {"params": [p for n, p in trainable if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    if fused and not settings.bias_correction:  # with the correction torch's kernel is another update
        return fused_adamw(groups, settings.lr, settings.betas, settings.adam_eps, correct_bias=False)
    return AdamW(
        groups, lr=settings.lr, eps=settings.adam_eps, betas=settings.betas, correct_bias=settings.bias_correction
    )


def batches(items: Sequence, settings: LoopSettings) -> Iterator[list]:
    """The loop's batches of ``items``, epoch after epoch without end: each epoch a permutation drawn from a
    generator seeded with ``settings.seed``, cut into batches of ``batch_size`` (the last one shorter)."""
    order = torch.Generator().manual_seed(settings.seed)
    while True:
        permutation = torch.randperm(len(items), generator=order).tolist()
        for start in range(0, len(items), settings.batch_size):
            yield [items[i] for i in permutation[start : start + settings.batch_size]]


def capture_ahead(
    items: Sequence,
    loss_fn: Callable[[list], torch.Tensor],
    settings: LoopSettings,
    device: str,
    steps: int,
    capturing: Callable[[], AbstractContextManager],
) -> float:
    """Give ``loss_fn`` the first ``steps`` batches the loop will draw (:func:`batches`: the same seed, the same
    order) inside ``capturing()`` (a graphed step's :meth:`~consert.train.graphs.GraphedStep.capturing_only`:
    each batch shape not yet seen is captured, nothing is replayed), so that the loop's first ``steps`` steps
    capture nothing; returns the seconds it took. Nothing is trained: a benchmark times the steps after it."""
    started = time.perf_counter()
    with capturing():
        for batch in itertools.islice(batches(items, settings), steps):
            with autocast(device, settings.dtype):
                loss_fn(batch)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - started


class QueuedLosses:
    """The steps' losses still on the device, read back together into the log (a read waits for the device): each
    step stamped when it was queued, the last before a read once the read is done; with ``capture_count`` (how
    many CUDA graphs the step has captured so far), a step that captured logs how many as ``captures``."""

    def __init__(self, log: list[dict], started: float, capture_count: Callable[[], int] | None = None):
        self.log, self.started, self.capture_count = log, started, capture_count
        self.pending: list[tuple[int, torch.Tensor, float, float, int]] = []
        self.captures_seen = capture_count() if capture_count else 0  # those before the loop are no step's

    def queue(self, step: int, loss: torch.Tensor, lr: float) -> None:
        """Queue a step's loss; the captures since the previous step's are this step's."""
        captures = self.capture_count() if self.capture_count else 0
        captured, self.captures_seen = captures - self.captures_seen, captures
        self.pending.append((step, loss.detach(), lr, time.perf_counter() - self.started, captured))

    def flush(self) -> float | None:
        """Log the queued losses and return the last (None when none was queued); a non-finite one is a fault."""
        if not self.pending:
            return None
        values = torch.stack([entry[1] for entry in self.pending]).float().tolist()
        finished = time.perf_counter() - self.started  # the device has finished the window
        for index, ((step, _, lr, seconds, captured), value) in enumerate(zip(self.pending, values, strict=True)):
            if not math.isfinite(value):
                raise TrainingFault(f"step {step}: loss is {value} (non-finite); stopping without export")
            entry = {
                "step": step,
                "loss": value,
                "lr": lr,
                "seconds": finished if index == len(values) - 1 else seconds,
            }
            self.log.append({**entry, "captures": captured} if captured else entry)
        self.pending.clear()
        return values[-1]


class _Optimisation:
    """The update of a step: AdamW (:func:`adamw`) under the linear warm-up and decay over the ``planned`` steps,
    gradient clipping, and the gradient scaler (active in fp16 only). With ``computes_gradients`` the loss has
    already written the gradients (a CUDA graph's backward): no backward pass, and they are not set to None."""

    def __init__(
        self,
        parameters: Sequence[tuple[str, nn.Parameter]],
        settings: LoopSettings,
        device: str,
        planned: int,
        computes_gradients: bool,
    ):
        from transformers import get_linear_schedule_with_warmup

        dtype = settings.dtype
        if dtype not in RESOLVED_DTYPES:
            raise ValueError(f"run_loop needs a resolved dtype ({RESOLVED_DTYPES}), got {dtype!r}")
        if computes_gradients and dtype == "fp16":
            raise ValueError("a loss_fn that computes its own gradients cannot train in fp16 (the gradient scaler)")
        self.scaler = torch.amp.GradScaler("cuda", enabled=dtype == "fp16")
        self.optimizer = adamw(parameters, settings, fused=torch.device(device).type == "cuda")
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(settings.warmup_ratio * planned), planned)
        self.trainable = [p for _, p in parameters if p.requires_grad]
        self.max_grad_norm = settings.max_grad_norm
        self.computes_gradients = computes_gradients

    def apply(self, loss: torch.Tensor) -> float:
        """Update the parameters from ``loss``'s gradients; returns the learning rate the update used."""
        if not self.computes_gradients:
            self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.trainable, self.max_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return self.scheduler.get_last_lr()[0]

    def state_dict(self) -> dict:
        """The optimizer's, the schedule's and the gradient scaler's states (a resumable checkpoint's)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])

    def advance(self) -> None:
        """Move the schedule on to the next step and clear the gradients the loop's backward pass wrote."""
        self.scheduler.step()
        if not self.computes_gradients:
            self.optimizer.zero_grad(set_to_none=True)


class _DevSelection:
    """The dev evaluations' record: each score logged in ``log``, the best state kept in memory (on the CPU),
    patience counted as ``settings.patience_counts`` says, and the state the model ends in."""

    def __init__(self, model: nn.Module, settings: LoopSettings, log: list[dict], started: float):
        self.model, self.settings, self.log, self.started = model, settings, log, started
        self.best: dict = {"step": 0, "dev": -math.inf, "state": None}
        self.misses, self.previous = 0, -math.inf

    @property
    def out_of_patience(self) -> bool:
        return self.settings.patience is not None and self.misses >= self.settings.patience

    def record(self, step: int, score: float, times: int) -> bool:
        """Log ``times`` evaluations of the same model scoring ``score`` after ``step``, keep the best state;
        True when patience runs out. A score that is not finite (NaN vectors, every pair at one cosine) is a fault:
        no comparison with it chooses a state."""
        if not math.isfinite(score):
            raise TrainingFault(
                f"step {step}: the dev Spearman is {score} (not finite: the dev vectors hold NaN, or every dev pair "
                "has the same cosine); stopping without export"
            )
        for _ in range(times):
            self.log.append({"step": step, "dev_spearman": score, "seconds": time.perf_counter() - self.started})
            improved = score > self.best["dev"]
            if improved:
                state = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}
                self.best.update(step=step, dev=score, state=state)
            if self.settings.patience_counts == "declines":
                self.misses += score < self.previous
            else:
                self.misses = 0 if improved else self.misses + 1
            self.previous = score
            if self.out_of_patience:
                break  # the authors' fit returns as soon as patience runs out
        return self.out_of_patience

    def state_dict(self) -> dict:
        """The best state so far and the patience count (a resumable checkpoint's)."""
        return {"best": self.best, "misses": self.misses, "previous": self.previous}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.misses, self.previous = dict(state["best"]), state["misses"], state["previous"]

    def result(self, steps: int, planned: int, captured_ahead_s: float) -> LoopResult:
        """The loop's result after ``steps`` steps; the model restored to its best state unless
        ``final_state="last"``. No evaluation at all is a fault: there is no state to choose."""
        best = self.best
        if best["state"] is None:
            raise TrainingFault("no dev evaluation was run; set eval_at_start or eval_every <= the planned steps")
        if self.settings.final_state == "best":
            self.model.load_state_dict(best["state"])
            final_step, final_dev = best["step"], best["dev"]
        else:
            last = [entry for entry in self.log if "dev_spearman" in entry][-1]
            final_step, final_dev = last["step"], last["dev_spearman"]
        return LoopResult(best["step"], best["dev"], steps, planned, self.log, final_step, final_dev, captured_ahead_s)


class _ProgressBar:
    """The loop's tqdm bar (off unless ``progress``), its postfix the last loss read back and the dev scores."""

    def __init__(self, planned: int, desc: str, progress: bool):
        self.status: dict[str, str] = {}
        self.bar = tqdm(total=planned, desc=desc, unit="step", disable=not progress)

    def read(self, losses: QueuedLosses) -> None:
        """Read the queued losses back and log them; on a non-finite one, close the bar and stop."""
        try:
            last = losses.flush()
        except TrainingFault:
            self.bar.close()
            raise
        if last is not None:
            self.status["loss"] = f"{last:.4f}"
            self.bar.set_postfix(self.status, refresh=False)

    def scored(self, score: float, best: float) -> None:
        self.status.update(dev=f"{score:.2f}", best=f"{best:.2f}")
        self.bar.set_postfix(self.status)

    def advance(self) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


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
    computes_gradients: bool = False,
    read_every: int | None = None,
    capture_count: Callable[[], int] | None = None,
    graphed: GraphedStep | None = None,
    capture_steps: int | None = None,
    checkpointing: Checkpointing | None = None,
) -> LoopResult:
    """Minimise ``loss_fn(batch)`` over shuffled batches of ``items``; ``model`` ends at its best dev
    state (or where it stopped, with ``final_state="last"``). With ``computes_gradients``, ``loss_fn``
    has already written the step's gradients into the parameters' ``.grad`` (a CUDA graph's backward,
    :mod:`consert.train.graphs`): the loop neither runs a backward pass nor sets the gradients to None. Losses
    are read back every ``read_every`` steps (default :func:`read_interval`): a step's ``seconds``
    is when it was queued, but the last before a read is stamped once the device has finished it.
    ``capture_count``: how many one-time captures (CUDA graphs, :mod:`consert.train.graphs`) the step has made so
    far; a step that made some logs their number as ``captures``, so that a rate can leave its window out.
    ``graphed``: ``loss_fn`` replays these CUDA graphs, which compute the gradients and count the captures (as
    ``computes_gradients`` and ``capture_count`` do); with ``capture_steps`` too, the graphs of the first
    ``capture_steps`` batches are captured before the loop (:func:`capture_ahead`, for a benchmark), the seconds
    that took in the result's ``captured_ahead_s``. ``checkpointing``: a resumable checkpoint is written when due
    (:mod:`consert.train.resume`), and the loop starts from the stage's last one where there is one."""
    captured_ahead = 0.0
    if graphed is not None:
        computes_gradients, capture_count = True, graphed.capture_count
        if capture_steps:
            captured_ahead = capture_ahead(items, loss_fn, settings, device, capture_steps, graphed.capturing_only)
    planned = settings.planned_steps(len(items))
    grid = evaluation_grid(len(items), settings)
    optimisation = _Optimisation(parameters, settings, device, planned, computes_gradients)
    read_every = read_every or read_interval(device)
    log: list[dict] = []
    started = time.perf_counter()
    selection = _DevSelection(model, settings, log, started)
    bar = _ProgressBar(planned, desc, progress)
    losses = QueuedLosses(log, started, capture_count)

    def evaluate(step: int, times: int = 1) -> bool:
        """Score on dev (``times`` evaluations of the same model), keep the best state; True when patience runs out."""
        bar.read(losses)
        try:
            score = dev_fn()
        except TrainingFault as fault:  # the steps' log goes with it (a benchmark times the steps all the same)
            fault.log = log
            raise
        out_of_patience = selection.record(step, score, times)
        bar.scored(score, selection.best["dev"])
        return out_of_patience

    saved = checkpointing.load() if checkpointing is not None else None
    if saved is None:
        step, stop = 0, settings.eval_at_start and evaluate(0)
    else:  # the model, the heads and the random generators are restored: the rest of the loop's state here
        step, stop = saved["step"], False
        optimisation.load_state_dict(saved["optimisation"])
        selection.load_state_dict(saved["selection"])
        log.extend(saved["log"])
        started = selection.started = losses.started = time.perf_counter() - saved["elapsed"]
        bar.bar.update(step)
    model.train()
    for batch in itertools.islice(batches(items, settings), step, step if stop else planned):
        with autocast(device, settings.dtype):
            loss = loss_fn(batch)
        step += 1
        lr = optimisation.apply(loss)
        losses.queue(step, loss, lr)  # stamped before the schedule moves on, with the rate of its own update
        optimisation.advance()
        if step % read_every == 0:
            bar.read(losses)
        bar.advance()
        if step in grid and evaluate(step, grid[step]):
            break
        if checkpointing is not None and step < planned and checkpointing.due(step):
            bar.read(losses)  # the log complete up to this step
            state = {"optimisation": optimisation.state_dict(), "selection": selection.state_dict(), "log": log}
            checkpointing.save(step, {**state, "elapsed": time.perf_counter() - started})
    bar.read(losses)
    bar.close()
    return selection.result(step, planned, captured_ahead)
