"""The recipe card: every planned training run of a workflow config, as it will train, next to the authors'.

``consert recipe --configfile config/config.yaml`` (and the DAG rule ``recipe``) writes
``results/recipe.csv``: one row per baseline fit (:mod:`consert.paper.recipe_card_baselines`) and one per run
with its stage, start model, optimisation, views, loss,
evaluation and precision settings, the authors' source, and ``differs_from_authors``, which lists
each value that differs from the authors' recipe (:mod:`consert.train.recipes`) with its reason. A
difference no rule explains is marked ``UNEXPLAINED``; for the paper's config there must be none.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from consert import sweeps
from consert.paper.recipe_card_baselines import (
    MEASURED_PRECISION,
    UNEXPLAINED,
    baseline_card_rows,
    test_precision_difference,
)
from consert.planner.plan import RunSpec, plan_runs, train_overrides, unique_runs
from consert.train.augment import EMBEDDING_AUGMENTATIONS
from consert.train.config import TrainConfig
from consert.train.modes import MODES, authors_recipe, sub_configs
from consert.train.notes import ATTENTION_DROPOUT_NOTE, FUSED_DROPOUT_NOTE, GRAPHS_NOTE
from consert.train.objectives import objective_for

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig

#: Keys compared with the authors' recipe, in column order.
COMPARED_KEYS = (
    "batch_size",
    "lr",
    "epochs",
    "max_steps",
    "n_texts",
    "upsample",
    "views",
    "token_cutoff",
    "feature_cutoff",
    "dropout",
    "temperature",
    "contrastive_weight",
    "loss",
    "projection",
    "discriminator_weight",
    "discriminator_dropout",
    "text_augmentations",
    "spacy_model",
    "remove_dropout",
    "classifier_features",
    "adam_bias_correction",
    "adam_eps",
    "weight_decay",
    "max_grad_norm",
    "warmup_ratio",
    "eval_every",
    "eval_grid",
    "patience",
    "train_pooling",
    "dev_pooling",
    "eval_pooling",
    "eval_max_length",
    "dev_max_pairs",
    "max_length",
    "seed",
)
DEV_SET_NOTE = (
    "SentEval's STSBenchmark/sts-dev.csv (Moses-tokenized, like every set here); the authors read the same "
    "1,500 pairs from sbert.net's raw stsbenchmark.tsv.gz"
)
#: What one epoch of a ConSERT stage holds in the paper: the unlabeled STS texts (Table 1) and the SNLI +
#: MultiNLI training pairs.
STS_TEXTS, NLI_PAIRS = 89_192, 942_069


def warmup_note(config: TrainConfig) -> str:
    """The run's own warm-up against the authors': ours ``int(0.1 x planned steps)``, theirs
    ``ceil(0.1 x items x epochs / batch)`` (main.py), for the items one epoch of the paper's run holds."""
    if objective_for(config).is_supervised:
        items = NLI_PAIRS
    elif config.n_texts:  # few-shot: the sample repeated int(1 / p) times (--do_upsampling)
        items = config.n_texts * int(STS_TEXTS / config.n_texts) if config.upsample else config.n_texts
    else:
        items = STS_TEXTS
    batch, epochs = config.batch_size, config.epochs
    ours, theirs = int(0.1 * math.ceil(items / batch) * epochs), math.ceil(0.1 * items * epochs / batch)
    relation = "equal" if ours == theirs else f"{ours} against {theirs}"
    note = (
        f"int(0.1 x planned steps), the authors ceil(0.1 x items x epochs / batch); for the paper's {items:,} "
        f"items at batch {batch} over {epochs} epochs: {relation}"
    )
    if config.max_steps:
        note += f"; this run stops at max_steps {config.max_steps}: {int(0.1 * config.max_steps)} warm-up steps"
    return note


OPTIMIZER_NOTE = (
    "on CUDA torch's fused AdamW with its step counts started at 1e9, where both bias corrections are exactly 1 "
    "(the authors' correct_bias=False); it decays the weights before the update, the authors' transformers 3.4 "
    "after it: lr^2 x 0.01 x |update| a step, 2.5e-15 at lr 5e-7 (a float64 test). On a CPU, the authors' order"
)
DROPOUT_NOTE = (
    "BERT's own dropout, one switch per stage (remove_dropout), the scripts' values: --no_dropout in "
    "unsup-consert-base.sh only. The sources disagree: the paper (consert.txt line 138) says it is removed; the "
    "first author wrote in yym6472/ConSERT issue #1 (2021-06) that every experiment set it to 0, then in issue "
    "#28 (2022-08) that the earlier experiments had kept it and the runs without it were later ablations, "
    "which is what the scripts that produced the numbers do"
)


def max_length_note(max_length: int) -> str:
    """How the authors' and our truncation at ``max_length`` differ."""
    return (
        f"the authors' tokenizer wrapper turns max_seq_length {max_length} into at most {max_length + 1} "
        f"WordPieces + [CLS]/[SEP]; ours counts the special tokens ({max_length} tokens, {max_length - 2} "
        f"WordPieces); only sentences of more than {max_length - 2} WordPieces differ"
    )


def consert_notes(config: TrainConfig, size: str) -> str:
    """The recipe card's notes of a ConSERT stage's run."""
    notes = [f"max_length: {max_length_note(config.max_length)}"]
    if size in MODES[config.mode].notes_by_size:
        notes.append(MODES[config.mode].notes_by_size[size])
    notes += [f"dev set: {DEV_SET_NOTE}", f"warm-up: {warmup_note(config)}", f"dropout: {DROPOUT_NOTE}"]
    if not config.adam_bias_correction:  # the fused kernel runs only the uncorrected update
        notes.append(f"optimizer: {OPTIMIZER_NOTE}")
    if not objective_for(config).is_supervised:
        notes.append(f"CUDA graphs: {GRAPHS_NOTE}")
    if not config.remove_dropout:
        notes.append(ATTENTION_DROPOUT_NOTE)
        if config.compile == "on":
            notes.append(FUSED_DROPOUT_NOTE)
    return "; ".join(notes)


def run_notes(config: TrainConfig, size: str) -> str:
    """The recipe card's notes of a run: its mode's record's, else (a ConSERT stage's) derived from the run."""
    return MODES[config.mode].notes or consert_notes(config, size)


def mode_differences(config: TrainConfig) -> list[str]:
    """Differences of a run from its authors' that no compared key shows: its texts where its authors trained on
    SimCSE's Wikipedia sentences, and what its own settings leave out of their authors'."""
    out = []
    if MODES[config.mode].authors_texts == "wiki1m" and config.train_texts == "sts":
        out.append(
            "train_texts: the 89,192 unlabeled STS texts (authors: 1M English Wikipedia sentences, "
            "wiki1m_for_simcse.txt; the offline stand-in for them)"
        )
    for name in sub_configs():
        out += getattr(config, name).differences
    return out


def authors_values(stage: str, size: str) -> dict[str, Any]:
    """The authors' value of every compared key for ``stage`` at ``size`` (``None``: all texts, no step cap)."""
    values = {"max_steps": None, "n_texts": None, "dev_max_pairs": None, "dropout": 0.2, **authors_recipe(stage, size)}
    for name, cls in sub_configs().items():  # a sub-config's keys by their own names, as TrainConfig.flat gives
        values.update({**cls().model_dump(), **values.pop(name)})
    values["upsample"] = True  # few-shot runs: main.py --data_proportion with --do_upsampling (Figure 6)
    values["seed"] = MODES[stage].seed
    return values


def _used_keys(config: TrainConfig) -> set[str]:
    """The keys that matter for this run's stage (a rate only when its augmentation is a view)."""
    supervised = objective_for(config).is_supervised
    contrastive_keys = {"views", "temperature", "contrastive_weight", "loss", "projection"}
    own = {name: set(cls.model_fields) for name, cls in sub_configs().items()}
    keys = set(COMPARED_KEYS) - set(EMBEDDING_AUGMENTATIONS) - contrastive_keys - set().union(*own.values())
    if objective_for(config).is_contrastive:
        keys |= contrastive_keys
        keys |= {rate for rate in EMBEDDING_AUGMENTATIONS if rate in config.views}
    for name, settings_keys in own.items():  # a method's own settings, where they do anything in this run
        if getattr(config, name).in_use:
            keys |= settings_keys & set(COMPARED_KEYS)  # its recipe values (not where its data lies: WordNet's folder)
    if not supervised:
        keys -= {"classifier_features"}
    if supervised:
        keys -= {"n_texts"}
    if supervised or config.n_texts is None:  # upsampling applies to a few-shot sample only
        keys -= {"upsample"}
    return keys


def _same(key: str, ours: Any, theirs: Any) -> bool:
    if key == "views":  # NT-Xent treats its two views alike: the pair is unordered
        return sorted(ours) == sorted(theirs)
    if isinstance(ours, list | tuple) and isinstance(theirs, list | tuple):
        return list(ours) == list(theirs)
    return ours == theirs


def _reason(key: str, spec: RunSpec, setting: str) -> str:
    """Why ``key`` of this run may differ from the authors' value, or ``UNEXPLAINED``."""
    if key == "seed":
        return MODES[spec.mode].seed_note
    if key in ("text_augmentations", "spacy_model") and any(word in setting for word in ("offline", "test")):
        return "the parser-based augmentations need a spaCy model with a parser, which cannot be installed offline"
    for swept, _ in spec.overrides:  # a sweep's point: its key, or a rate of the views it sweeps
        if key == swept or (swept == "views" and key in EMBEDDING_AUGMENTATIONS):
            return f"{sweeps.BY_FIELD[swept].point} (a sweep point)"
    if any(word in setting for word in ("offline", "test")):
        return "short CPU runs of the offline/test config"
    return UNEXPLAINED


def _text(value: Any, none: str = "") -> str:
    if isinstance(value, list | tuple):
        return "+".join(str(v) for v in value)
    return none if value is None else str(value)


def recipe_card(config: WorkflowConfig, run_configs: dict[str, TrainConfig] | None = None) -> pd.DataFrame:
    """One row per planned training run of a workflow ``config`` (see the module docstring), each read from
    ``run_configs`` (the runs' ``train.yaml``, by run id) when given, else resolved from the config."""
    plan = plan_runs(config)
    runs = unique_runs(plan)
    artifacts: dict[str, set[str]] = {run_id: set() for run_id in runs}
    for item in plan:
        artifacts[item.spec.run_id].add(item.artifact)
        if item.spec.stage1 is not None:
            artifacts[item.spec.stage1.run_id].add(f"{item.artifact} (stage 1)")
    setting = config.setting
    rows = []
    for run_id, spec in runs.items():
        train_config = (
            run_configs[run_id] if run_configs else TrainConfig.from_dict(train_overrides(spec, config), source=run_id)
        )
        theirs = authors_values(train_config.mode, spec.size)
        used, settings = _used_keys(train_config), train_config.flat()
        differences = []
        for key in sorted(used, key=COMPARED_KEYS.index):
            ours = settings[key]
            if not _same(key, ours, theirs[key]):
                reason = _reason(key, spec, setting)
                ours_text, theirs_text = _text(ours, "none"), _text(theirs[key], "none")
                differences.append(f"{key}: {ours_text} (authors {theirs_text}; {reason})")
        precision, precision_text = MODES[train_config.mode].precision
        if train_config.dtype != precision:
            differences.append(f"precision: {train_config.dtype} (authors {precision_text}; {MEASURED_PRECISION})")
        objective = objective_for(train_config)
        if MODES[train_config.mode].fp16_similarities and objective.is_contrastive and train_config.dtype != "fp32":
            differences.append(
                "similarities: fp32 under autocast (authors fp16: apex O1 ran their matmul of the normalised views in "
                "fp16; fp32 as SimCSE's cosine_similarity, where bf16 would round cosines near 1 to steps of 2**-8)"
            )
        differences += [*mode_differences(train_config), test_precision_difference(train_config.dtype)]
        if objective.is_supervised and "snli" not in train_config.nli_source:
            differences.append(f"nli: {train_config.nli_source} (authors snli+mnli; the offline stand-in for them)")
        row: dict[str, Any] = {
            "run": run_id,
            "artifacts": ";".join(sorted(artifacts[run_id])),
            "mode": train_config.mode,
            "start_model": train_config.stage1_model or train_config.model,
            "nli": train_config.nli_source if objective.is_supervised else "",
        }
        row.update({key: _text(settings[key]) if key in used else "" for key in COMPARED_KEYS})
        row.update(
            bert_dropout="off" if train_config.remove_dropout else "on",
            optimizer="AdamW" + ("" if train_config.adam_bias_correction else " (no bias correction)"),
            precision=train_config.dtype,
            authors_source=theirs["source"],
            differs_from_authors="; ".join(filter(None, differences)),
            notes=run_notes(train_config, spec.size),
        )
        rows.append(row)
    return pd.DataFrame(rows + baseline_card_rows(config))


def unexplained(card: pd.DataFrame) -> list[str]:
    """``run: differences`` of every row with a difference no rule explains."""
    return [
        f"{row.run}: {row.differs_from_authors}" for row in card.itertuples() if UNEXPLAINED in row.differs_from_authors
    ]
