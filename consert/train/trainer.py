"""The ConSERT trainer: one stage = an objective (:mod:`consert.train.objectives`) over the encoder it trains,
the step's execution (:mod:`consert.train.execution`) and the optimisation loop (:mod:`consert.train.loop`).

A stage: AdamW with linear warm-up over 10% of the planned steps, gradient clipping, STS-B dev evaluation
every ``eval_every`` steps with the dev pooling, the best checkpoint kept in memory, early stopping after
``patience`` evaluations without improvement, and an export of the best checkpoint in sentence-transformers'
format. ``sup-unsup``/``joint-unsup`` run an NLI stage, then an unsupervised stage that starts from the first
stage's best checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from consert.data.senteval import SentEvalData, load_senteval
from consert.train.architectures import architecture_of
from consert.train.config import TrainConfig
from consert.train.execution import StepExecution
from consert.train.export import export_model
from consert.train.loop import batches, loop_settings, planned_step_count, run_loop
from consert.train.objectives import check_objective, objective_for
from consert.train.record import loop_record, provenance_record
from consert.train.resume import Checkpointing
from consert.train.self_check import fast_path, self_check
from consert.train.trained_encoder import TrainedEncoder, check_trainable, set_seed


@dataclass
class TrainResult:
    """Where the best model went and how it was found."""

    output_dir: Path
    best_step: int
    best_dev_spearman: float
    steps: int
    log: list[dict]
    model: nn.Module | None = None  # the in-memory model, holding the best checkpoint
    tokenizer: object | None = None
    #: AugCSE: per text augmentation, how often it was drawn and how often it changed the text
    augmentation_rates: dict[str, dict[str, float]] = field(default_factory=dict)
    #: seconds spent capturing the CUDA graphs of the first ``capture_steps`` steps before training (a benchmark's)
    captured_ahead_s: float = 0.0


def train_stage(
    config: TrainConfig,
    data: SentEvalData,
    progress: bool,
    execution_steps: int | None = None,
    capture_steps: int | None = None,
) -> TrainResult:
    """Run one stage of ``config`` with the objective that trains it, and export its selected checkpoint.
    ``execution_steps``: the run length the step's execution is chosen for (``compile``/``cuda_graphs: auto``;
    default: the stage's planned steps), so that a benchmark times a few steps as a longer run executes them.
    ``capture_steps``: when the step runs as CUDA graphs, capture the shapes of the first ``capture_steps``
    batches before training (:func:`~consert.train.loop.capture_ahead`), so that a benchmark's timed steps
    capture nothing (the draws of the views then differ from an uncaptured run's: for timing only)."""
    objective_class = objective_for(config)  # an unknown name fails before the model is loaded
    set_seed(config.seed)
    encoder = TrainedEncoder(config, data)
    execution = StepExecution(encoder)
    objective = objective_class(config, encoder, execution)
    items = objective.training_items(data, progress)
    planned_steps = planned_step_count(len(items), config.batch_size, config.epochs, config.max_steps)
    objective.prefill(items, planned_steps * config.batch_size)
    parameters = list(encoder.model.named_parameters())
    for head in objective.heads():
        parameters += [(f"{type(head).__name__}.{name}", value) for name, value in head.named_parameters()]
    execution.settle(execution_steps or planned_steps, [value for _, value in parameters], objective)
    settings = loop_settings(config, encoder.dtype, bias_correction=config.adam_bias_correction)
    checked = self_check(execution, objective, next(batches(items, settings)))  # a fast path against an eager step
    modules = {"model": encoder.model, **{f"head{index}": head for index, head in enumerate(objective.heads())}}
    resumable = {key: value for key, value in config.to_dict().items() if key != "checkpoint_every"}
    checkpointing = Checkpointing.of_stage(
        config.output_dir,
        config.checkpoint_every,
        modules,
        resumable,
        data.fingerprint,
        encoder.dtype,
        fast_path(execution),
    )
    outcome = run_loop(
        encoder.model,
        parameters,
        items,
        objective.loss,
        encoder.dev_spearman,
        settings,
        encoder.device,
        desc=f"train {objective.label}",
        progress=progress,
        graphed=execution.graphed,
        capture_steps=capture_steps,
        checkpointing=checkpointing,
    )
    record = {
        "base_model": encoder.resolved.base_model,
        **encoder.resolved.identity.columns(),  # which paper encoder it descends from: its evaluations' rows say so
        "started_from": config.model,
        "mode": config.mode,
        **objective.record(),
        "setting": encoder.resolved.setting,
        **loop_record(outcome),
        "final_state": config.final_state,  # the exported state: the best dev one, or the last
        "steps_run": outcome.steps,
        "planned_steps": outcome.planned,
        "train_items": len(items),
        "text_augmentations": objective.augmentation_rates,
        "dev_pooling": config.dev_pooling,
        "eval_pooling": config.eval_pooling,
        "architecture": architecture_of(encoder.model.config).title,
        "compiled": execution.compiled,
        "packed": execution.packed,
        "eager_because": execution.eager_because,
        "self_check": checked.describe() if checked else None,
        "modules_not_kept": encoder.modules_not_kept,
        "cuda_graphs": execution.graphed.capture_count() if execution.graphed else 0,  # graphs captured (shapes seen)
        **provenance_record(encoder.precision, encoder.device, config.to_dict(), data),
    }
    execution.release()
    output = export_model(
        encoder.model,
        encoder.tokenizer,
        config.output_dir,
        pooling=config.eval_pooling,
        max_length=config.max_length,
        record=record,
        log=outcome.log,
    )
    checkpointing.remove()  # exported: nothing to resume
    return TrainResult(
        output,
        outcome.best_step,
        outcome.best_dev,
        outcome.steps,
        outcome.log,
        encoder.model,
        encoder.tokenizer,
        objective.augmentation_rates,
        outcome.captured_ahead_s,
    )


def train(
    config: TrainConfig,
    data: SentEvalData | None = None,
    progress: bool = True,
    execution_steps: int | None = None,
    capture_steps: int | None = None,
) -> TrainResult:
    """Train as ``config.mode`` says and export the best checkpoint to ``config.output_dir``.

    A two-stage mode trains its NLI stage first (:meth:`TrainConfig.first_stage`, exported beside
    the output as ``OUTPUT_DIR.stage1``) unless ``stage1_model`` names one already trained; the
    second stage starts from that model with its own recipe. ``execution_steps``, ``capture_steps``: as
    :func:`train_stage`'s.
    """
    check_objective(config)  # a batch without negatives, say: refused before any data or model is read
    for stage in (config.first_stage(), config) if config.two_stage and config.stage1_model is None else (config,):
        check_trainable(stage)  # an architecture outside the table, a view or fast path it cannot take
    data = data if data is not None else load_senteval(config.data)
    if not config.two_stage:
        return train_stage(config, data, progress, execution_steps, capture_steps)
    start = config.stage1_model
    if start is None:
        start = str(train_stage(config.first_stage(), data, progress, execution_steps, capture_steps).output_dir)
    return train_stage(config.replace(model=start), data, progress, execution_steps, capture_steps)
