"""The ConSERT authors' training recipes, stage by stage, with the source of every value.

A run's stage decides its defaults: ``unsup`` (from BERT), the NLI stages ``sup`` (SBERT-NLI) and
``joint``, and the second stages ``sup-unsup`` and ``joint-unsup`` (unsupervised, starting from the
matching NLI stage). The values are the authors' base-model scripts (ConSERT repository,
``scripts/*-base.sh``) with ``main.py``'s defaults for what a script leaves out; where the paper's
text disagrees (dropout, the classifier features) the scripts win, and the paper's variant stays
reachable by config. ``COMMON`` holds what every stage shares.
"""

from __future__ import annotations

from typing import Any

#: Stages, in the order a two-stage run trains them.
STAGES = ("unsup", "sup", "joint", "sup-unsup", "joint-unsup")
#: The first (NLI) stage of each two-stage setting.
FIRST_STAGE = {"sup-unsup": "sup", "joint-unsup": "joint"}

#: The classifier input of the authors' scripts (``--concatenation_sent_max_square``); the paper
#: and SBERT use ("u", "v", "abs_diff").
AUTHORS_CLASSIFIER = ("u", "v", "abs_diff", "max_square")

#: Per stage: the authors' value of every key that differs between stages, and the script it is from.
AUTHORS: dict[str, dict[str, Any]] = {
    "unsup": {
        "source": "scripts/unsup-consert-base.sh",
        "lr": 5e-7,
        "batch_size": 96,
        "epochs": 10,
        "patience": 10,
        "views": ("feature_cutoff", "shuffle"),  # --da_final_1 feature_cutoff --da_final_2 shuffle
        "feature_cutoff": 0.2,
        "remove_dropout": True,  # --no_dropout: only this run
    },
    "sup": {
        "source": "scripts/sup-sbert-base.sh (lr, epochs: main.py defaults)",
        "lr": 2e-5,
        "batch_size": 96,
        "epochs": 1,
        "patience": None,  # no --patience: no early stopping (the best dev checkpoint is still kept)
        "remove_dropout": False,
        "classifier_features": AUTHORS_CLASSIFIER,
    },
    "joint": {
        "source": "scripts/sup-consert-joint-base.sh (lr, epochs: main.py defaults)",
        "lr": 2e-5,
        "batch_size": 96,
        "epochs": 1,
        "patience": None,
        "views": ("none", "token_cutoff"),  # --data_augmentation_strategy cutoff --cutoff_direction row
        "token_cutoff": 0.1,
        "remove_dropout": False,
        "classifier_features": AUTHORS_CLASSIFIER,
    },
    "sup-unsup": {
        "source": "scripts/sup-consert-sup-unsup-base.sh",
        "lr": 5e-7,
        "batch_size": 96,
        "epochs": 25,
        "patience": 10,
        "views": ("none", "feature_cutoff"),  # --data_augmentation_strategy cutoff --cutoff_direction column
        "feature_cutoff": 0.1,
        "remove_dropout": False,
    },
    "joint-unsup": {
        "source": "scripts/sup-consert-joint-unsup-base.sh",
        "lr": 5e-7,
        "batch_size": 96,
        "epochs": 25,
        "patience": 10,
        "views": ("none", "shuffle"),  # --data_augmentation_strategy shuffle
        "remove_dropout": False,
    },
}

#: Where the authors' BERT-large scripts (``scripts/*-large.sh``) differ from the base ones.
AUTHORS_BY_SIZE: dict[str, dict[str, dict[str, Any]]] = {
    "large": {
        "unsup": {
            "source": "scripts/unsup-consert-large.sh",
            "views": ("none", "shuffle"),  # --data_augmentation_strategy shuffle
            "remove_dropout": False,  # no --no_dropout
            "epochs": 25,
            "eval_every": 100,
        },
        "sup": {"source": "scripts/sup-sbert-large.sh"},
        "joint": {"source": "scripts/sup-consert-joint-large.sh", "max_length": 40},
        "sup-unsup": {"source": "scripts/sup-consert-sup-unsup-large.sh", "epochs": 10},
        "joint-unsup": {"source": "scripts/sup-consert-joint-unsup-large.sh", "epochs": 10, "max_length": 40},
    }
}

#: What every stage shares (main.py and the authors' modified sentence-transformers ``fit``).
COMMON: dict[str, Any] = {
    "temperature": 0.1,
    "contrastive_weight": 0.15,  # --cl_rate 0.15, applied even with --cl_loss_only
    "adam_bias_correction": False,  # transformers.AdamW(..., correct_bias=False)
    "adam_eps": 1e-6,
    "weight_decay": 0.01,
    "max_grad_norm": 1.0,
    "warmup_ratio": 0.1,
    "eval_every": 200,
    "eval_grid": "epoch",  # steps counted within each epoch, plus an evaluation at every epoch's end
    "dev_pooling": "mean",  # checkpoint selection: the model's own last-layer mean
    "eval_pooling": "mean:-2,-1",  # the reported test numbers: last-two-layer average
    "max_length": 64,
    "seed": 1,
}


#: Stage-dependent keys no script of a stage sets: the paper's rates and the unsupervised views.
FALLBACK: dict[str, Any] = {
    "token_cutoff": 0.15,
    "feature_cutoff": 0.2,
    "views": AUTHORS["unsup"]["views"],
    "classifier_features": AUTHORS_CLASSIFIER,
}


#: Keys whose default depends on the stage.
STAGE_KEYS = tuple(sorted({key for recipe in AUTHORS.values() for key in recipe} - {"source"} | set(FALLBACK)))


def stage_defaults(stage: str) -> dict[str, Any]:
    """The training-config defaults of ``stage``: every stage-dependent key, the authors' value where
    the stage's script sets one, else :data:`FALLBACK` (the paper's cutoff rates 0.15 and 0.2)."""
    if stage not in AUTHORS:
        raise ValueError(f"unknown stage {stage!r}; expected one of {STAGES}")
    return {**FALLBACK, **{key: value for key, value in AUTHORS[stage].items() if key != "source"}}


def authors_recipe(stage: str, size: str = "base") -> dict[str, Any]:
    """Every value of the authors' recipe for ``stage`` at model ``size`` (``base``/``large``), and its source."""
    size_values = AUTHORS_BY_SIZE.get(size, {}).get(stage, {})
    return {"source": AUTHORS[stage]["source"], **COMMON, **stage_defaults(stage), **size_values}
