"""Every trainable mode, one record each: ConSERT's five stages, BERT-flow's own BERT-NLI, the contrastive family
(SimCSE, AugCSE) and SG-OPT.

A :class:`TrainableMode` holds everything the harness knows of one: its name (``TrainConfig.mode``, its runs' ids),
its label in the tables, its authors' recipe (each value with its source; the recipe names the objective), its first
stage if it has one, its own settings class, its authors' precision and seed, the recipe card's notes, the model
card's training data, the kind of seed noise the verdict gives its rows, its published rows, and which block of the
workflow config holds its keys. The plan, both cards, the design, the decision, the command line and the config's
checks read :data:`MODES` when they run, so a mode declared here (and, where it needs them, its objective and its
settings) is planned, trained, carded, tabled and judged. The recipes themselves are data:
:mod:`consert.train.recipes` (ConSERT's stages, BERT-flow's NLI encoder) and :mod:`consert.train.methods` (the
family). Every list of mode names anywhere (the command line's choices, the config schema's, the docs' tables) is
derived from these records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from consert.registry import FAMILY, TABLE2, TABLE3
from consert.train import recipes
from consert.train.methods import AUGCSE_RECIPE, SIMCSE_RECIPE, AugCseSettings
from consert.train.notes import ATTENTION_DROPOUT_NOTE, FAMILY_GRID_NOTE, GRAPHED_DROPOUT_NOTE, GRAPHS_NOTE

#: Where a mode's runs take their keys from in the workflow config (:func:`consert.planner.plan.train_overrides`):
#: ConSERT's stages from ``train`` and ``stages``, the contrastive family's methods from ``family``, BERT-flow's
#: NLI encoder from ``baselines.flow_nli``, SG-OPT from ``baselines.sgopt``.
STAGE_KEYS_BLOCK, METHOD_KEYS_BLOCK, FLOW_NLI_BLOCK, SGOPT_BLOCK = "stages", "methods", "flow_nli", "sgopt"
WORKFLOW_BLOCKS = (STAGE_KEYS_BLOCK, METHOD_KEYS_BLOCK, FLOW_NLI_BLOCK, SGOPT_BLOCK)
#: The commands that train a mode: ``consert train`` (ConSERT's loop) or ``consert sgopt`` (SG-OPT's own).
TRAINERS = ("train", "sgopt")


@dataclass(frozen=True)
class TrainableMode:
    """One trainable mode, as every part of the harness names it."""

    name: str  # TrainConfig.mode (the config's family.methods entry for the family), and its runs' ids
    label: str  # its name in the tables ("<label>-<size>")
    recipe: Mapping[str, Any]  # its authors' value of every key it sets ("objective" names its loss), and "source"
    precision: tuple[str, str]  # its authors' training precision: (the dtype of ours it is, as they ran it)
    training_data: str  # what the model card says it trained on
    notes: str | None = None  # the recipe card's notes; None: derived from the run (a ConSERT stage's)
    notes_by_size: Mapping[str, str] = field(default_factory=dict)  # derived notes' addition at a size
    first_stage: str | None = None  # the mode whose model it starts from (a two-stage setting's NLI stage)
    by_size: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # its authors' values at another size
    seed: int = 1  # the seed its authors' runs used (SimCSE's and AugCSE's: the HF Trainer's default 42)
    seed_note: str = "a further seed of the config's seeds list"  # the recipe card's word on another seed
    settings: type | None = None  # its own settings: a sub-config under its name (TrainConfig.<name>)
    noise: str = "consert"  # the kind of seed noise (results/published/decision.yaml) its rows carry
    published_in: str = ""  # the artifact (consert.registry) whose published rows it reproduces; "" for none
    published: Mapping[str, str] = field(default_factory=dict)  # {size: its row of contrastive_family.csv}
    published_number: bool = True  # whether that row holds a number (then it is a primary cell of the design)
    workflow_block: str = STAGE_KEYS_BLOCK  # the workflow config's block of its keys (WORKFLOW_BLOCKS)
    authors_texts: str = "sts"  # what its authors trained on: the STS texts, or "wiki1m" (SimCSE's 1M sentences)
    fp16_similarities: bool = False  # its authors' views' similarities in fp16 (ConSERT's apex O1)
    trained_by: str = "train"  # the command that trains it (TRAINERS)
    exported_as: str = ""  # the method name its exports record, where not its name (SG-OPT's "sg-opt")

    def __post_init__(self) -> None:
        if self.workflow_block not in WORKFLOW_BLOCKS or self.trained_by not in TRAINERS:
            raise ValueError(f"mode {self.name}: workflow_block {WORKFLOW_BLOCKS}, trained_by {TRAINERS}")


#: The authors of ConSERT trained in fp16 with apex O1 on GPUs.
CONSERT_PRECISION = ("fp16", "fp16 (apex O1)")
#: Why the harness trains BERT-large's joint stages at 64 tokens, where the authors' scripts say 40 (their README,
#: line 73: models 2-10 were retrained, BERT-large's max_seq_length changed to 40).
LARGE_LENGTH_NOTE = (
    "max_length 64 as the paper: the authors' sup-consert-joint-large.sh and sup-consert-joint-unsup-large.sh "
    "pass 40, a later retrain (their README: models 2-10 were retrained with max_seq_length 40 for BERT-large, "
    "so results may differ from the paper's); the published Table 3 rows are the paper's, at 64"
)


def _consert_stage(name: str, recipe: Mapping[str, Any], large: Mapping[str, Any], **record: Any) -> TrainableMode:
    """A ConSERT stage's record: the authors' script ``recipe`` (``large``: where their BERT-large script differs)."""
    return TrainableMode(
        name,
        "ConSERT",
        recipe,
        CONSERT_PRECISION,
        by_size={"large": large},
        fp16_similarities=True,
        **record,
    )


CONSERT_STAGES: tuple[TrainableMode, ...] = (
    _consert_stage(
        "unsup", recipes.UNSUP, recipes.UNSUP_LARGE, training_data="unlabeled texts", published_in=TABLE2.key
    ),
    _consert_stage("sup", recipes.SUP, recipes.SUP_LARGE, training_data="NLI pairs", published_in=TABLE3.key),
    _consert_stage(
        "joint",
        recipes.JOINT,
        recipes.JOINT_LARGE,
        training_data="NLI pairs (with the contrastive objective on their sentences)",
        notes_by_size={"large": LARGE_LENGTH_NOTE},
        published_in=TABLE3.key,
    ),
    _consert_stage(
        "sup-unsup",
        recipes.SUP_UNSUP,
        recipes.SUP_UNSUP_LARGE,
        first_stage="sup",
        training_data="NLI pairs, then unlabeled texts",
        published_in=TABLE3.key,
    ),
    _consert_stage(
        "joint-unsup",
        recipes.JOINT_UNSUP,
        recipes.JOINT_UNSUP_LARGE,
        first_stage="joint",
        training_data="NLI pairs (joint objective), then unlabeled texts",
        notes_by_size={"large": LARGE_LENGTH_NOTE},
        published_in=TABLE3.key,
    ),
)

BERTFLOW_NLI = TrainableMode(
    "bertflow-nli",
    "BERT-flow NLI encoder",
    recipes.BERTFLOW_NLI,
    ("fp32", "fp32 (TensorFlow 1, no mixed precision)"),
    training_data="NLI pairs",
    notes=(
        "BERT-flow's own BERT-NLI, the encoder Table 3's BERT-flow (NLI) rows fit their flow on: their README's "
        "ALLNLI command (MNLI train + SNLI train, dev and test: 961,735 pairs, 60,108 steps at batch 16, the "
        "checkpoint model.ckpt-60108), run_siamese.py's classifier on [u, v, |u - v|] without bias over the last "
        "layer's mean, BERT's AdamWeightDecay (no bias correction), 10% warm-up then linear decay, clip 1.0, dropout "
        "on, the last step kept (no dev selection); the dev score is logged once, after the last step; on CUDA "
        "torch's fused AdamW with both bias corrections at exactly 1, whose decay of the pre-update weights is "
        "AdamWeightDecay's own"
    ),
    noise="flow_nli",
    workflow_block=FLOW_NLI_BLOCK,
)

#: The family's seed: their scripts set none, so the HF Trainer's default.
FAMILY_SEED_NOTE = "the config's seeds list (the authors' scripts leave the HF Trainer's default seed 42)"

SIMCSE = TrainableMode(
    "simcse",
    "SimCSE",
    SIMCSE_RECIPE,
    ("fp16", "fp16 (torch AMP)"),  # run_unsup_example.sh passes --fp16
    training_data="unlabeled texts",
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
    by_size={
        "large": {
            "source": "princeton-nlp/SimCSE README (hyperparameters: unsupervised BERT-large lr 1e-5)",
            "lr": 1e-5,
        }
    },
    seed=42,
    seed_note=FAMILY_SEED_NOTE,
    noise="simcse",
    published_in=FAMILY.key,
    published={"base": "SimCSE-BERT-base"},
    workflow_block=METHOD_KEYS_BLOCK,
    authors_texts="wiki1m",
)
AUGCSE = TrainableMode(
    "augcse",
    "AugCSE",
    AUGCSE_RECIPE,
    ("fp32", "fp32"),  # run_train_exp.py sets no fp16
    training_data="unlabeled texts",
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
    seed=42,
    seed_note=FAMILY_SEED_NOTE,
    settings=AugCseSettings,
    noise="simcse",
    published_in=FAMILY.key,
    published={"base": "AugCSE-BERT-base"},
    published_number=False,  # their STS table is outside the text available here
    workflow_block=METHOD_KEYS_BLOCK,
    authors_texts="wiki1m",
)

SGOPT = TrainableMode(
    "sgopt",
    "SG-OPT",
    {"source": "galsang/SG-BERT: training.py defaults, loss.py (head init, guide in train mode), modules.py (fit)"},
    ("fp32", "fp32 (modules.py's fit: use_amp=False)"),
    training_data="unlabeled texts",
    noise="sgopt",
    published_in="sgopt_table1",  # SG-OPT's own Table 1 (results/published/sgopt_table1_bert_base.csv)
    workflow_block=SGOPT_BLOCK,
    trained_by="sgopt",
    exported_as="sg-opt",
)

#: Every trainable mode, by name, in the order of the tables' rows (ConSERT's stages in the order a two-stage run
#: trains them). Read it when a run needs it, not once at import: a mode added later is then everywhere at once.
MODES: dict[str, TrainableMode] = {mode.name: mode for mode in (*CONSERT_STAGES, BERTFLOW_NLI, SIMCSE, AUGCSE, SGOPT)}


def find_mode(name: str) -> TrainableMode | None:
    """The record of mode ``name``, or of the method name an export records (SG-OPT's ``sg-opt``); None for neither."""
    return MODES.get(name) or next((mode for mode in MODES.values() if mode.exported_as == name), None)


def mode_record(name: str) -> TrainableMode:
    """The record of mode ``name`` (:func:`find_mode`); an unknown name is a one-line :class:`ValueError` naming the
    known ones."""
    found = find_mode(name)
    if found is None:
        raise ValueError(f"unknown mode {name!r}; expected one of {', '.join(MODES)}")
    return found


def published_in(artifact: str) -> tuple[str, ...]:
    """The modes whose runs reproduce ``artifact``'s published rows (a :mod:`consert.registry` key), in order."""
    return tuple(name for name, mode in MODES.items() if mode.published_in == artifact)


def modes_of(block: str) -> dict[str, TrainableMode]:
    """The modes whose runs take their keys from the workflow config's ``block`` (:data:`WORKFLOW_BLOCKS`)."""
    return {name: mode for name, mode in MODES.items() if mode.workflow_block == block}


def loop_modes() -> tuple[str, ...]:
    """What ``consert train`` (ConSERT's loop) trains: every mode but SG-OPT's, which has its own command."""
    return tuple(name for name, mode in MODES.items() if mode.trained_by == "train")


def two_stage(name: str) -> bool:
    """Whether mode ``name`` trains a first stage before its own."""
    return mode_record(name).first_stage is not None


def sub_configs() -> dict[str, type]:
    """The modes' own settings classes, by their key in a training config (the mode's name)."""
    return {name: mode.settings for name, mode in MODES.items() if mode.settings is not None}


def recipe_of(mode: str) -> Mapping[str, Any]:
    """The mode's own recipe (its authors' values and their source); one-line :class:`ValueError` for no mode's."""
    if mode not in loop_modes():
        raise ValueError(f"unknown stage {mode!r}; expected one of {loop_modes()}")
    return MODES[mode].recipe


def stage_defaults(mode: str) -> dict[str, Any]:
    """The training-config defaults of ``mode``: every stage-dependent key, the mode's own value where its recipe
    sets one, else :data:`~consert.train.recipes.FALLBACK` (the paper's cutoff rates 0.15 and 0.2, a method's
    settings at their class's defaults) and :data:`~consert.train.recipes.COMMON`."""
    own = {key: value for key, value in recipe_of(mode).items() if key != "source"}
    return {**recipes.COMMON, **recipes.FALLBACK, **{name: {} for name in sub_configs()}, **own}


def authors_recipe(mode: str, size: str = "base") -> dict[str, Any]:
    """Every value of the authors' recipe for ``mode`` at model ``size`` (``base``/``large``), and its source."""
    size_values = MODES[mode].by_size.get(size, {}) if mode in MODES else {}
    return {"source": recipe_of(mode)["source"], **recipes.COMMON, **stage_defaults(mode), **size_values}


def consert_stage_keys() -> tuple[str, ...]:
    """Stage-dependent keys of ConSERT's own stages (a two-stage run's first stage does not inherit them)."""
    stage_keys = {key for mode in modes_of(STAGE_KEYS_BLOCK).values() for key in mode.recipe}
    return tuple(sorted(stage_keys - {"source"} | set(recipes.FALLBACK) | set(sub_configs())))


def stage_keys() -> tuple[str, ...]:
    """Keys whose default depends on the mode (ConSERT's, and every key another mode's recipe sets)."""
    own = {key for name in loop_modes() for key in MODES[name].recipe} - {"source"}
    return tuple(sorted(set(consert_stage_keys()) | own))
