"""The recipes of the contrastive family trained beside ConSERT by its own loop, and AugCSE's own settings: data
only, each value with its source. Their records (name, label, precision, notes, published rows) are in
:mod:`consert.train.modes`, one per trainable mode.
"""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from consert.configs import ConfigError, Settings, key
from consert.train.text_augment import LEFT_OUT, check_text_augmentations


class AugCseSettings(Settings):
    """AugCSE's own settings: the objective ``augcse`` reads them, no other does (``TrainConfig.augcse``).

    Their authors' values are in AugCSE's recipe (:data:`AUGCSE_RECIPE`); elsewhere the discriminator
    is off. Every settings class of a method has ``in_use`` (what the settings do in a run, "" for nothing) and
    ``differences`` (the recipe card's words on what they leave out of their authors')."""

    discriminator_weight: float = key("lambda: the augmentation discriminator's loss weight; 0 turns it off", 0.0)
    text_augmentations: tuple[str, ...] = key(
        "the sentence augmentations the discriminator tells apart (consert.train.text_augment)", ()
    )
    spacy_model: str | None = key("the spaCy model of the parser-based augmentations (null: a blank tokenizer)", None)
    discriminator_dropout: float = key("the discriminator's dropout before each of its linear layers", 0.2)
    wordnet: str | None = key(
        "WordNet 3.0's database folder (index.adj, data.adj) or an NLTK data folder, for the antonym switch; null: "
        "the first of data/wordnet, NLTK's data folders and Debian's /usr/share/wordnet that holds it",
        None,
    )

    @property
    def in_use(self) -> str:
        """What these settings do in a run ("" when nothing): the discriminator, when its weight is positive."""
        return "AugCSE's discriminator" if self.discriminator_weight > 0 else ""

    @property
    def differences(self) -> list[str]:
        """What the recipe card says of these settings where they differ from their authors' beyond their values:
        the authors' augmentations this harness leaves out, when the discriminator trains."""
        if not self.in_use:
            return []
        return [
            "augmentations left out of the authors' 12: " + "; ".join(f"{n} ({why})" for n, why in LEFT_OUT.items())
        ]

    @model_validator(mode="after")
    def _checked(self) -> AugCseSettings:
        if not 0 <= self.discriminator_dropout < 1:
            raise ConfigError(
                f"augcse.discriminator_dropout: expected a number in [0, 1), got {self.discriminator_dropout}"
            )
        if self.discriminator_weight < 0:
            raise ConfigError(f"augcse.discriminator_weight: expected a number >= 0, got {self.discriminator_weight}")
        if self.discriminator_weight > 0:
            try:
                check_text_augmentations(self.text_augmentations)
            except ValueError as err:
                raise ConfigError(f"augcse.text_augmentations: {err}") from None
        return self


#: SimCSE, unsupervised (princeton-nlp/SimCSE: run_unsup_example.sh, simcse/models.py, train.py and the
#: Trainer defaults of the transformers 4.2.1 it pins); the paper (arXiv 2104.08821 v4) where it agrees.
SIMCSE_RECIPE: dict[str, Any] = {
    "source": "princeton-nlp/SimCSE run_unsup_example.sh + simcse/models.py (HF Trainer defaults, transformers 4.2.1)",
    "objective": "contrastive",
    "lr": 3e-5,  # script; paper Table A.1 and footnote 2
    "batch_size": 64,  # script; paper Table A.1
    "epochs": 1,  # script; paper App. A
    "patience": None,  # load_best_model_at_end without early stopping
    "views": ("none", "none"),  # the batch twice through one pass: the views differ by BERT's dropout only
    "remove_dropout": False,
    "temperature": 0.05,  # --temp 0.05; paper Table D.1
    "contrastive_weight": 1.0,
    "loss": "infonce",  # models.py cl_forward: z1 against the N z2's, one direction
    "projection": "mlp",  # --pooler_type cls --mlp_only_train: Linear + Tanh on [CLS] in training only
    "train_pooling": "cls",
    "dev_pooling": "cls",  # the MLP is dropped at evaluation: [CLS] before the pooler
    "eval_pooling": "cls",
    "max_length": 32,  # --max_seq_length 32 (training)
    "eval_max_length": 512,  # evaluation pads to the longest sentence, no truncation (SentEval batcher)
    "eval_every": 125,  # --eval_steps 125 (the paper's App. A says every 250 steps)
    "eval_grid": "global",
    "adam_bias_correction": True,  # transformers.AdamW default correct_bias=True
    "adam_eps": 1e-8,
    "weight_decay": 0.0,
    "warmup_ratio": 0.0,  # warmup_steps 0: linear decay from the first step
}

#: AugCSE's STS recipe (PootieT/AugCSE experiments/run_train_exp.py, "should reproduce our STS-B results";
#: the model, head and loss from model.py, mlp.py, training/discriminator.py; HF Trainer defaults of the
#: transformers 4.22.2 it pins). Where it is silent, SimCSE's (it builds on SimCSE's code).
AUGCSE_RECIPE: dict[str, Any] = {
    **SIMCSE_RECIPE,
    "source": "PootieT/AugCSE experiments/run_train_exp.py + model.py, mlp.py, training/discriminator.py",
    "objective": "augcse",
    "lr": 2e-5,  # learning_rate=2e-5
    "batch_size": 128,  # per_device_train_batch_size=128
    "epochs": 4,  # num_train_epochs=4
    "eval_every": 500,  # eval_steps=500
    "loss": "infonce_symmetric",  # contrastive_loss_type="ranking": (CE(S) + CE(S^T)) / 2
    "projection": "bn_mlp",  # projection_layers=100: DiffCSE's batch-norm MLP, skipped at evaluation
    "augcse": {
        "discriminator_weight": 0.005,  # lambda; gradient reversal multiplier 1.0
        "discriminator_dropout": 0.2,  # training/discriminator.py: dropout before each linear layer
        "text_augmentations": (
            "contraction_expansions",
            "auxiliary_negation_removal",
            "discourse_marker_substitution",
            "subject_object_switch",
            "random_swap",
            "adjectives_antonyms_switch",
            "yoda_perturbation",
            "sentence_reordering",
        ),  # the implemented 8 of the authors' 12, in their order (consert.train.text_augment.LEFT_OUT: the other 4)
        "spacy_model": "en_core_web_sm",  # NL-Augmenter's initialize.py
    },
}
