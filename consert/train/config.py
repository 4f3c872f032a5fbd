"""Training configuration: one validated dataclass, filled from YAML files or ``key=value`` overrides.

Defaults are the authors' recipe (:mod:`consert.train.recipes`): the paper plus what only their code says
(AdamW without bias correction, eps 1e-6, weight decay 0.01, clip 1.0, warm-up over 10% of the
planned steps, dev evaluation every 200 steps within each epoch and at each epoch's end, best
checkpoint by the last-layer mean, contrastive loss = 0.15 x the sum of both directions). Keys whose
value depends on the stage (lr, batch size, epochs, patience, views and rates, BERT's dropout, the
classifier features) default to the authors' value for the run's ``mode``: ``TrainConfig(mode="sup")``
is the SBERT-NLI recipe. A two-stage ``mode`` describes its second stage; ``stage1`` holds overrides
of the first (NLI) stage, and ``stage1_model`` names an already trained first stage to start from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from consert.configs import ConfigError, dataclass_from_dict, key, key_rows, parse_overrides, read_yaml
from consert.data.nli import NLI_SOURCES
from consert.encode.models import STAND_IN_MODEL
from consert.encode.pooling import POOLER, Pooling
from consert.encode.precision import DTYPE_CHOICES
from consert.train.augment import EMBEDDING_AUGMENTATIONS, check_augmentation
from consert.train.losses import CONTRASTIVE_LOSSES, FEATURES, PROJECTION_HEADS
from consert.train.methods import AugCseSettings
from consert.train.modes import MODES, consert_stage_keys, loop_modes, stage_defaults, sub_configs


def _mode_help() -> str:
    """The ``mode`` key's help: every mode ``consert train`` trains, by its records (:mod:`consert.train.modes`)."""
    groups: dict[str, list[str]] = {}
    for name in loop_modes():
        groups.setdefault(MODES[name].label, []).append(name)
    return "what to train: " + "; ".join(f"{', '.join(names)} ({label})" for label, names in groups.items())


def _objective_help() -> str:
    """The ``objective`` key's help: the objectives the modes' recipes name."""
    named = dict.fromkeys(str(MODES[name].recipe["objective"]) for name in loop_modes())
    return f"what the stage optimises: {', '.join(named)} (consert.train.objectives)"


LOSSES = tuple(CONTRASTIVE_LOSSES)
PROJECTIONS = ("none", *PROJECTION_HEADS)
EVAL_GRIDS = ("epoch", "global")
COMPILE_CHOICES = ("auto", "on", "off")
CLASSIFIER_FEATURES = tuple(FEATURES)
#: Shortest max_length accepted: [CLS] + [SEP] + a few tokens (2 gives every sentence the same vector).
MIN_MAX_LENGTH = 8


class _ByStage:
    """Marker default of a stage-dependent key: replaced by the authors' value for the run's mode."""

    def __repr__(self) -> str:
        return "<the stage's default>"


BY_STAGE: Any = _ByStage()


@dataclass
class TrainConfig:
    """Everything that decides a ConSERT training run."""

    model: str = key("the encoder to start from: a hub id or a local folder", STAND_IN_MODEL)
    output_dir: str = key(
        "where the trained model is exported (absent, empty, or an earlier export of the harness)", "runs/consert"
    )
    mode: str = key(_mode_help(), "unsup")
    # stage-dependent (BY_STAGE: the authors' value for the mode, see consert.train.recipes)
    objective: str = key(_objective_help(), BY_STAGE)
    views: tuple[str, str] = key(
        "the two views' augmentations: shuffle, token_cutoff, feature_cutoff, dropout, none, adversarial", BY_STAGE
    )
    token_cutoff: float = key("the share of token positions the token-cutoff view zeroes", BY_STAGE)
    feature_cutoff: float = key("the share of feature dimensions the feature-cutoff view zeroes", BY_STAGE)
    remove_dropout: bool = key("BERT's own dropout off (the authors: only the unsupervised run from BERT)", BY_STAGE)
    lr: float = key("the peak learning rate (linear warm-up, then linear decay)", BY_STAGE)
    batch_size: int = key("texts (or NLI pairs) per step", BY_STAGE)
    epochs: int = key("passes over the training texts", BY_STAGE)
    patience: int | None = key("evaluations without a gain before stopping; None: never stop early", BY_STAGE)
    classifier_features: tuple[str, ...] = key("NLI classifier input (the authors add max(u, v)^2)", BY_STAGE)
    classifier_bias: bool = key("SBERT's classifier has one; BERT-flow's NLI classifier has none", BY_STAGE)
    classifier_init_std: float | None = key("None: nn.Linear's init; else a normal truncated at 2 SD", BY_STAGE)
    final_state: str = key('"best" dev checkpoint (ConSERT), or "last" (BERT-flow\'s NLI encoder)', BY_STAGE)
    # stage-dependent as well, the same for every ConSERT stage (consert.train.recipes.COMMON); the contrastive
    # family's methods have their own values
    temperature: float = key("the NT-Xent / InfoNCE temperature", BY_STAGE)
    contrastive_weight: float = key("cl_rate: times the sum of both directions' NT-Xent, even when alone", BY_STAGE)
    loss: str = key('"nt_xent" (ConSERT), "infonce" (SimCSE), "infonce_symmetric" (AugCSE)', BY_STAGE)
    projection: str = key('training-only head: "mlp" (SimCSE\'s Linear + Tanh), "bn_mlp" (AugCSE\'s)', BY_STAGE)
    augcse: AugCseSettings = key(
        "AugCSE's own settings (objective augcse), a mapping over the stage's: discriminator_weight, "
        "discriminator_dropout, text_augmentations, spacy_model",
        BY_STAGE,
    )
    weight_decay: float = key("AdamW's weight decay (not on biases and LayerNorm weights)", BY_STAGE)
    adam_eps: float = key("AdamW's epsilon", BY_STAGE)
    adam_bias_correction: bool = key("ConSERT: transformers.AdamW(correct_bias=False)", BY_STAGE)
    warmup_ratio: float = key("the share of the planned steps spent warming the learning rate up", BY_STAGE)
    eval_every: int = key("steps between two STS-B dev evaluations", BY_STAGE)
    eval_grid: str = key('"epoch": every eval_every steps within each epoch + each epoch\'s end (ConSERT)', BY_STAGE)
    max_length: int = key("tokens per training text, [CLS] and [SEP] included", BY_STAGE)
    eval_max_length: int | None = key("dev and test encoding (None: max_length; SimCSE: no truncation)", BY_STAGE)
    train_pooling: str = key("the pooling of the training views (the objective's sentence vectors)", BY_STAGE)
    dev_pooling: str = key("checkpoint selection (ConSERT: the model's own last-layer mean)", BY_STAGE)
    eval_pooling: str = key("the reported test numbers (ConSERT: the last two layers' mean)", BY_STAGE)
    dropout: float = key("the dropout view's rate", BY_STAGE)
    adversarial_epsilon: float = key(
        "the adversarial view's perturbation norm (joint mode's 'adversarial' view)", BY_STAGE
    )
    max_grad_norm: float = key("gradient clipping norm", BY_STAGE)
    max_steps: int | None = key("stop after this many steps (null: the epochs' length); for smoke runs", None)
    eval_at_start: bool = key("sentence-transformers (the authors' code) first evaluates after eval_every steps", False)
    dev_max_pairs: int | None = key("evaluate on the first n STS-B dev pairs only (fast smoke runs)", None)
    seed: int = key("the run's seed (data order, views, initialisation of the heads)", BY_STAGE)
    dtype: str = key("the precision measured fastest on this machine (consert.encode.precision)", "auto")
    compile: str = key(
        'torch.compile the training forward: "auto" (CUDA runs of 500+ steps not replayed as CUDA graphs), "on" (under'
        ' CUDA graphs: each layer\'s per-token chain fused, consert.train.fused), "off"',
        "auto",
    )
    packed: str = key('"on": the training passes\' dense layers on real tokens only (consert.train.packed)', "off")
    cuda_graphs: str = key(
        'the packed step (contrastive, NLI, joint) as CUDA graphs: "auto" (CUDA runs of 500+ steps), "on", "off"',
        "auto",
    )
    device: str | None = key("cpu or cuda (null: cuda when available)", None)
    data: str | None = key("the SentEval data folder (null: looked for as every command looks; docs: Data)", None)
    train_texts: str = key('"sts" (the 89,192 unlabeled STS texts) or a file with one text a line', "sts")
    n_texts: int | None = key("few-shot: the first n of the training texts shuffled with the run's seed", None)
    upsample: bool = key("few-shot: repeat the n texts int(corpus / n) times (main.py --do_upsampling)", True)
    nli_source: str = key(
        "the NLI pairs of sup/joint: sick-e (SICK's entailment labels, offline) or snli+mnli (nli_files)", "sick-e"
    )
    nli_files: list[str] = key("the SNLI/MultiNLI jsonl files read when nli_source is snli+mnli", factory=list)
    stage1: dict[str, Any] = key("overrides of a two-stage mode's first stage", factory=dict)
    stage1_model: str | None = key("a trained first stage: the second stage starts from it", None)

    #: Keys a two-stage run's first stage inherits (the rest come from its own stage and ``stage1``).
    NOT_INHERITED: ClassVar[frozenset[str]] = frozenset(
        {*consert_stage_keys(), "mode", "output_dir", "max_steps", "n_texts", "train_texts", "stage1", "stage1_model"}
    )

    def __post_init__(self) -> None:
        _choice("mode", self.mode, loop_modes())
        for name, value in stage_defaults(self.mode).items():
            if getattr(self, name) is BY_STAGE:
                setattr(self, name, value)
        self.views = tuple(self.views)
        self.classifier_features = tuple(self.classifier_features)
        for name, settings in sub_configs().items():
            setattr(self, name, _sub_config(settings, getattr(self, name), stage_defaults(self.mode)[name], name))
        check_train_config(self)

    @property
    def evaluation_max_length(self) -> int:
        """Tokens per sentence when the dev and test sets are encoded."""
        return self.eval_max_length or self.max_length

    @property
    def two_stage(self) -> bool:
        """Whether this run trains a first stage before its own (its mode's record names one)."""
        return MODES[self.mode].first_stage is not None

    def first_stage(self) -> TrainConfig:
        """A two-stage mode's first (NLI) stage: its own recipe, the shared keys, then ``stage1``."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in self.NOT_INHERITED}
        values = {
            **shared,
            "mode": MODES[self.mode].first_stage,
            "output_dir": f"{self.output_dir}.stage1",
            **self.stage1,
        }
        return TrainConfig.from_dict(values, source="stage1")

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "config") -> TrainConfig:
        """Build from a mapping; unknown keys are an error naming the source and the known keys."""
        return dataclass_from_dict(cls, values, source)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for JSON/YAML records); a sub-config as its mapping."""
        values = dataclasses.asdict(self)
        values["views"] = list(self.views)
        values["classifier_features"] = list(self.classifier_features)
        for name in sub_configs():  # a sub-config's tuples as lists, as YAML and JSON write them
            values[name] = {key: list(v) if isinstance(v, tuple) else v for key, v in values[name].items()}
        return values

    def flat(self) -> dict[str, Any]:
        """Every setting by its own name, a sub-config's keys beside the others (what the recipe card compares)."""
        settings = sub_configs()
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in settings}
        for name, cls in settings.items():
            values.update((f.name, getattr(getattr(self, name), f.name)) for f in dataclasses.fields(cls))
        return values

    def replace(self, **changes: Any) -> TrainConfig:
        """A validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)


def key_help(mode: str = "unsup") -> list[tuple[str, Any, str]]:
    """Every training key with its value for ``mode`` (the authors' recipe where it depends on the stage)
    and its help text: what ``consert train --list-keys`` prints and the docs' table shows. A sub-config's
    keys follow it as ``NAME.KEY``, each with its own help."""
    rows = []
    for name, value, text in key_rows(TrainConfig, TrainConfig(mode=mode)):
        if name in sub_configs():
            rows.append((name, "", text))
            rows += [(f"{name}.{key}", sub, help_text) for key, sub, help_text in key_rows(sub_configs()[name], value)]
        else:
            rows.append((name, value, text))
    return rows


def _sub_config(cls: type, given: Any, stage: dict[str, Any], name: str) -> Any:
    """A sub-config from what a config file gives (a mapping, over the stage's values) or a finished one."""
    if isinstance(given, cls):
        return given
    if not isinstance(given, dict):
        raise ConfigError(f"{name}: expected a mapping of {', '.join(f.name for f in dataclasses.fields(cls))}")
    return dataclass_from_dict(cls, {**stage, **given}, source=name)


def check_train_config(config: TrainConfig) -> None:
    """Every key of ``config`` checked (its stage defaults filled in): a :class:`ConfigError` names the first
    key that is wrong, what it holds and what was expected."""
    _choice("loss", config.loss, LOSSES)
    _choice("projection", config.projection, PROJECTIONS)
    for name in sub_configs():  # a method's own settings, where they do anything, need its objective
        settings, owner = getattr(config, name), MODES[name].recipe["objective"]
        if settings.in_use and config.objective != owner:
            raise ConfigError(f"{name}: {settings.in_use} needs objective {owner!r}, not {config.objective!r}")
    if config.eval_max_length is not None and config.eval_max_length < MIN_MAX_LENGTH:
        raise ConfigError(
            f"eval_max_length: expected at least {MIN_MAX_LENGTH} tokens or null, got {config.eval_max_length}"
        )
    if len(config.views) != 2:
        raise ConfigError(f"views: expected two augmentation names, got {list(config.views)}")
    for view in config.views:
        try:
            check_augmentation(view)
        except ValueError as err:
            raise ConfigError(f"views: {err}") from None
    if "adversarial" in config.views and config.mode != "joint":
        raise ConfigError("views: 'adversarial' needs the supervised loss; use it with mode 'joint' only")
    _choice("dtype", config.dtype, DTYPE_CHOICES)
    _choice("compile", config.compile, COMPILE_CHOICES)
    _choice("packed", config.packed, ("on", "off"))
    _choice("cuda_graphs", config.cuda_graphs, COMPILE_CHOICES)
    _choice("eval_grid", config.eval_grid, EVAL_GRIDS)
    _choice("final_state", config.final_state, ("best", "last"))
    for feature in config.classifier_features:
        _choice("classifier_features", feature, CLASSIFIER_FEATURES)
    _choice("nli_source", config.nli_source, NLI_SOURCES)
    for name in ("train_pooling", "dev_pooling", "eval_pooling"):
        try:
            kind = Pooling.parse(getattr(config, name)).kind
        except ValueError as err:
            raise ConfigError(f"{name}: {err}") from None
        if kind == POOLER:
            raise ConfigError(f"{name}: {POOLER} is an evaluation pooling (the pooler is not trained or exported)")
    for name in ("batch_size", "epochs", "eval_every"):
        if getattr(config, name) < 1:
            raise ConfigError(f"{name}: expected a positive integer, got {getattr(config, name)}")
    if config.max_length < MIN_MAX_LENGTH:
        raise ConfigError(
            f"max_length: expected at least {MIN_MAX_LENGTH} tokens ([CLS] and [SEP] included), got {config.max_length}"
        )
    for name in ("max_steps", "dev_max_pairs"):
        if getattr(config, name) is not None and getattr(config, name) < 1:
            raise ConfigError(f"{name}: expected a positive integer or null, got {getattr(config, name)}")
    if config.patience is not None and config.patience < 1:
        raise ConfigError(f"patience: expected a positive integer or null (no early stopping), got {config.patience}")
    for name in ("temperature", "lr"):
        if not getattr(config, name) > 0:
            raise ConfigError(f"{name}: expected a positive number, got {getattr(config, name)}")
    for name in (*EMBEDDING_AUGMENTATIONS, "warmup_ratio"):
        if not 0 <= getattr(config, name) < 1:
            raise ConfigError(f"{name}: expected a ratio in [0, 1), got {getattr(config, name)}")
    if config.n_texts is not None and config.n_texts < 1:
        raise ConfigError(f"n_texts: expected a positive integer or null, got {config.n_texts}")
    if (config.stage1 or config.stage1_model) and not config.two_stage:
        two_stage = tuple(name for name in loop_modes() if MODES[name].first_stage)
        raise ConfigError(f"stage1/stage1_model: only for the two-stage modes {two_stage}, not {config.mode!r}")
    if config.stage1:
        config.first_stage()  # validate the overrides now, not after the first stage has trained


def _choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{name}: expected one of {choices}, got {value!r}")


def load_train_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """The training config from a YAML file (optional) with ``key=value`` overrides applied on top."""
    values = read_yaml(path) if path else {}
    values.update(parse_overrides(overrides or []))
    return TrainConfig.from_dict(values, source=str(path) if path else "--set")
