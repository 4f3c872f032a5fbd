"""The methods trained beside ConSERT by its own loop (the contrastive family), each declared once.

A :class:`Method` holds everything the harness knows of one: its name and table label, its authors' recipe (each
value with its source), its objective (named by the recipe), its own settings class if it has one, its authors'
precision, the recipe card's notes, the model card's training data, the kind of seed noise the verdict gives its
rows, and its published row. The plan, both cards, the design, the decision, the claims and the config's checks
read :data:`METHODS` when they run, so a method declared here (and, where it needs them, its objective and its
settings) is planned, trained, carded, tabled and judged; the workflow config's keys name no method, and its
check at the workflow's start refuses a name or block no record has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from consert.configs import ConfigError, key
from consert.train.notes import ATTENTION_DROPOUT_NOTE, FAMILY_GRID_NOTE, GRAPHED_DROPOUT_NOTE, GRAPHS_NOTE
from consert.train.text_augment import check_text_augmentations


@dataclass(frozen=True)
class Method:
    """One method of the contrastive family, as every part of the harness names it."""

    name: str  # its mode: the config's family.methods entry, TrainConfig.mode and its runs' ids
    label: str  # its name in the tables: "<label>-<size>"
    recipe: Mapping[str, Any]  # its authors' value of every key it sets ("objective" names its loss), and "source"
    precision: tuple[str, str]  # its authors' training precision: (the dtype of ours it is, as they ran it)
    notes: str  # the recipe card's notes: what its recipe leaves to a choice of ours, where paper and code disagree
    training_data: str = "unlabeled texts"  # what the model card says it trained on
    noise: str = "simcse"  # the kind of seed noise (results/published/decision.yaml) its rows carry
    published: Mapping[str, str] = field(
        default_factory=dict
    )  # {size: its row of results/published/contrastive_family.csv}
    published_number: bool = True  # whether that row holds a number (then it is a primary cell of the design)
    by_size: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # its authors' values at another size
    seed: int = 42  # the seed its authors' runs used (SimCSE's and AugCSE's: the HF Trainer's default)
    settings: type | None = None  # its own settings: a sub-config under its name (TrainConfig.<name>)


@dataclass(frozen=True)
class AugCseSettings:
    """AugCSE's own settings: the objective ``augcse`` reads them, no other does (``TrainConfig.augcse``).

    Their authors' values are in AugCSE's recipe (:data:`consert.train.methods.AUGCSE`); elsewhere the discriminator
    is off. Every settings class of a method has ``in_use`` (what the settings do in a run, "" for nothing)."""

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "text_augmentations", tuple(self.text_augmentations))
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


SIMCSE = Method(
    "simcse",
    "SimCSE",
    SIMCSE_RECIPE,
    ("fp16", "fp16 (torch AMP)"),  # run_unsup_example.sh passes --fp16
    notes=(
        "eval_every: 125 from run_unsup_example.sh (the paper's Appendix A says 250); seed: the script sets none, "
        "so HF's 42 (ours: the config's seeds); loss: one direction, z1 against the N z2's (models.py cl_forward); "
        "the MLP head (Linear + Tanh, N(0, 0.02) init) is dropped at evaluation ([CLS] before the pooler); "
        + FAMILY_GRID_NOTE
        + "; CUDA graphs: "
        + GRAPHS_NOTE
        + "; "
        + ATTENTION_DROPOUT_NOTE
    ),
    published={"base": "SimCSE-BERT-base"},
    by_size={
        "large": {
            "source": "princeton-nlp/SimCSE README (hyperparameters: unsupervised BERT-large lr 1e-5)",
            "lr": 1e-5,
        }
    },
)
AUGCSE = Method(
    "augcse",
    "AugCSE",
    AUGCSE_RECIPE,
    ("fp32", "fp32"),  # run_train_exp.py sets no fp16
    notes=(
        "recipe: experiments/run_train_exp.py (the paper's Appendix A.7 was not available to check it); one "
        "augmentation per text drawn uniformly with the run's seed and fixed for the run, computed at the start "
        "(the authors precompute every augmentation of wiki1m and cache it); contraction and discourse-marker "
        "tables are ours (the authors': checklist's and NL-Augmenter's); checkpoint: STS-B dev Spearman (the "
        "authors also keep a transfer-task checkpoint); the released script's branch for a non-empty "
        "augmentation list pairs two augmentations and would crash, so the paper's uniform sampling is used; "
        "test pooling: [CLS] as the paper says (augcse_partial.txt lines 396-400), the one compared; the released "
        "experiments/run_eval.sh passes --pooler avg (family: {augcse: {eval_pooling: mean}} evaluates so); "
        "batch: 128 per GPU: train.py wraps the model in DataParallel on several GPUs (effective batch 128 x the "
        "GPU count), but its loss reads model.config.num_labels, which DataParallel does not expose, so the "
        "released code ran on one GPU (128); " + FAMILY_GRID_NOTE + "; CUDA graphs: " + GRAPHED_DROPOUT_NOTE
    ),
    published={"base": "AugCSE-BERT-base"},
    published_number=False,  # their STS table is outside the text available here
    settings=AugCseSettings,
)

#: Every method of the contrastive family, by name (the order of the tables' rows). Read it when a run needs it,
#: not once at import: a method added later (a test's toy method) is then everywhere at once.
METHODS: dict[str, Method] = {method.name: method for method in (SIMCSE, AUGCSE)}


def sub_configs() -> dict[str, type]:
    """The methods' own settings classes, by their key in a training config (the method's name)."""
    return {name: method.settings for name, method in METHODS.items() if method.settings is not None}
