"""The recipe card: every planned training run of a workflow config, as it will train, next to the authors'.

``consert recipe --configfile config/config.yaml`` (and the DAG rule ``recipe``) writes
``results/recipe.csv``: one row per baseline fit (:mod:`consert.baseline_recipe`) and one per run
with its stage, start model, optimisation, views, loss,
evaluation and precision settings, the authors' source, and ``differs_from_authors``, which lists
each value that differs from the authors' recipe (:mod:`consert.recipes`) with its reason. A
difference no rule explains is marked ``UNEXPLAINED``; for the paper's config there must be none.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .baseline_recipe import UNEXPLAINED, baseline_recipe_rows
from .config import TrainConfig
from .experiments import RunSpec, plan_runs, train_overrides, unique_runs
from .recipes import authors_recipe

#: The authors trained in fp16 with apex O1 on GPUs.
AUTHORS_PRECISION = "fp16 (apex O1)"
#: Keys compared with the authors' recipe, in column order.
COMPARED = (
    "batch_size",
    "lr",
    "epochs",
    "max_steps",
    "n_texts",
    "views",
    "token_cutoff",
    "feature_cutoff",
    "dropout",
    "temperature",
    "contrastive_weight",
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
    "dev_pooling",
    "eval_pooling",
    "dev_max_pairs",
    "max_length",
    "seed",
)
#: Which sweep a key belongs to, and the run-spec field that marks a run as that sweep's point.
SWEEP_OF = {
    "views": ("views", "Figure 5 augmentation pair"),
    "temperature": ("temperature", "Figure 7 temperature"),
    "batch_size": ("batch_size", "Table 4 batch size"),
    "n_texts": ("n_texts", "Figure 6 few-shot size"),
}
DEV_SET_NOTE = (
    "SentEval's STSBenchmark/sts-dev.csv (Moses-tokenized, like every set here); the authors read the same "
    "1,500 pairs from sbert.net's raw stsbenchmark.tsv.gz"
)
WARMUP_NOTE = (
    "int(0.1 x planned steps), the authors ceil(0.1 x texts x epochs / batch): equal for the 10-epoch "
    "unsupervised runs (930 steps at batch 96), 2 steps more for the 25-epoch second stages (2325 against 2323)"
)
MAX_LENGTH_NOTE = (
    "the authors' tokenizer wrapper turns max_seq_length 64 into at most 65 WordPieces + [CLS]/[SEP]; "
    "ours counts the special tokens (64 tokens); only sentences of more than 62 WordPieces differ"
)


def authors_values(stage: str, size: str) -> dict[str, Any]:
    """The authors' value of every compared key for ``stage`` at ``size`` (``None``: all texts, no step cap)."""
    return {"max_steps": None, "n_texts": None, "dev_max_pairs": None, "dropout": 0.2, **authors_recipe(stage, size)}


def _used_keys(config: TrainConfig) -> set[str]:
    """The keys that matter for this run's stage (a rate only when its augmentation is a view)."""
    supervised = config.mode in ("sup", "joint")
    contrastive = config.mode != "sup"
    keys = set(COMPARED) - {"token_cutoff", "feature_cutoff", "dropout", "views", "temperature", "contrastive_weight"}
    if contrastive:
        keys |= {"views", "temperature", "contrastive_weight"}
        keys |= {rate for rate in ("token_cutoff", "feature_cutoff", "dropout") if rate in config.views}
    if not supervised:
        keys -= {"classifier_features"}
    if supervised:
        keys -= {"n_texts"}
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
        return "a further seed of the config's seeds list"
    sweep = SWEEP_OF.get("views" if key in ("token_cutoff", "feature_cutoff", "dropout") else key)
    if sweep and getattr(spec, sweep[0]) is not None:
        return f"{sweep[1]} (a sweep point)"
    if any(word in setting for word in ("offline", "test")):
        return "short CPU runs of the offline/test config"
    return UNEXPLAINED


def _text(value: Any, none: str = "") -> str:
    if isinstance(value, list | tuple):
        return "+".join(str(v) for v in value)
    return none if value is None else str(value)


def recipe_card(config: dict[str, Any]) -> pd.DataFrame:
    """One row per planned training run of a workflow ``config`` (see the module docstring)."""
    plan = plan_runs(config)
    runs = unique_runs(plan)
    artifacts: dict[str, set[str]] = {run_id: set() for run_id in runs}
    for item in plan:
        artifacts[item.spec.run_id].add(item.artifact)
        if item.spec.stage1 is not None:
            artifacts[item.spec.stage1.run_id].add(f"{item.artifact} (stage 1)")
    setting = str(config.get("setting", ""))
    rows = []
    for run_id, spec in runs.items():
        train_config = TrainConfig.from_dict(train_overrides(spec, config), source=run_id)
        theirs = authors_values(train_config.mode, spec.size)
        used = _used_keys(train_config)
        differences = []
        for key in sorted(used, key=COMPARED.index):
            ours = getattr(train_config, key)
            if not _same(key, ours, theirs[key]):
                reason = _reason(key, spec, setting)
                ours_text, theirs_text = _text(ours, "none"), _text(theirs[key], "none")
                differences.append(f"{key}: {ours_text} (authors {theirs_text}; {reason})")
        if train_config.dtype != "fp16":
            differences.append(
                f"precision: {train_config.dtype} (authors {AUTHORS_PRECISION}; resolved from the hardware when "
                "run: bf16 where native, fp16 + gradient scaler on older GPUs, fp32 on other CPUs)"
            )
        if train_config.mode in ("sup", "joint") and "snli" not in train_config.nli_source:
            differences.append(f"nli: {train_config.nli_source} (authors snli+mnli; the offline stand-in for them)")
        row: dict[str, Any] = {
            "run": run_id,
            "artifacts": ";".join(sorted(artifacts[run_id])),
            "stage": train_config.mode,
            "start_model": train_config.stage1_model or train_config.model,
            "nli": train_config.nli_source if train_config.mode in ("sup", "joint") else "",
        }
        row.update({key: _text(getattr(train_config, key)) if key in used else "" for key in COMPARED})
        row.update(
            bert_dropout="off" if train_config.remove_dropout else "on",
            optimizer="AdamW" + ("" if train_config.adam_bias_correction else " (no bias correction)"),
            precision=train_config.dtype,
            authors_source=theirs["source"],
            differs_from_authors="; ".join(differences),
            notes=f"max_length: {MAX_LENGTH_NOTE}; dev set: {DEV_SET_NOTE}; warm-up: {WARMUP_NOTE}",
        )
        rows.append(row)
    return pd.DataFrame(rows + baseline_recipe_rows(config))


def unexplained(card: pd.DataFrame) -> list[str]:
    """``run: differences`` of every row with a difference no rule explains."""
    return [
        f"{row.run}: {row.differs_from_authors}" for row in card.itertuples() if UNEXPLAINED in row.differs_from_authors
    ]
