"""Training configuration: one checked settings class, filled from YAML files or ``key=value`` overrides.

Defaults are the authors' recipe (:mod:`consert.train.recipes`): the paper plus what only their code says
(AdamW without bias correction, eps 1e-6, weight decay 0.01, clip 1.0, warm-up over 10% of the
planned steps, dev evaluation every 200 steps within each epoch and at each epoch's end, best
checkpoint by the last-layer mean, contrastive loss = 0.15 x the sum of both directions). Keys whose
value depends on the stage (lr, batch size, epochs, patience, views and rates, BERT's dropout, the
classifier features; declared without a default) take the authors' value for the run's ``mode`` where a config
does not set them: ``TrainConfig(mode="sup")``
is the SBERT-NLI recipe. A two-stage ``mode`` describes its second stage; ``stage1`` holds overrides
of the first (NLI) stage, and ``stage1_model`` names an already trained first stage to start from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, create_model, model_validator

from consert.configs import (
    AtLeastOne,
    AutoOnOff,
    ConfigError,
    OnOff,
    Positive,
    Ratio,
    Settings,
    Temperature,
    key,
    key_rows,
    read_settings,
)
from consert.data.nli import NLI_SOURCES
from consert.encode.models import STAND_IN_MODEL
from consert.encode.pooling import POOLER, Pooling
from consert.encode.precision import DTYPE_CHOICES
from consert.train.augment import check_augmentation
from consert.train.losses import CONTRASTIVE_LOSSES, FEATURES, PROJECTION_HEADS
from consert.train.modes import MODES, consert_stage_keys, loop_modes, stage_defaults, sub_configs
from consert.train.resume import check_every


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
CLASSIFIER_FEATURES = tuple(FEATURES)
#: Shortest max_length accepted: [CLS] + [SEP] + a few tokens (2 gives every sentence the same vector).
MIN_MAX_LENGTH = 8
#: Tokens per text, [CLS] and [SEP] included.
Tokens = Annotated[int, Field(ge=MIN_MAX_LENGTH)]


class _RunKeys(Settings):
    """The training config's keys before the methods' own settings (:class:`TrainConfig`'s first part)."""

    model: str = key("the encoder to start from: a hub id or a local folder", STAND_IN_MODEL)
    output_dir: str = key(
        "where the trained model is exported (absent, empty, or an earlier export of the harness)", "runs/consert"
    )
    mode: str = key(_mode_help(), "unsup")
    # stage-dependent (no default here: the authors' value for the mode, see consert.train.recipes)
    objective: str = key(_objective_help())
    views: tuple[str, ...] = key(
        "the two views' augmentations: shuffle, token_cutoff, feature_cutoff, dropout, none, adversarial"
    )
    token_cutoff: Ratio = key("the share of token positions the token-cutoff view zeroes")
    feature_cutoff: Ratio = key("the share of feature dimensions the feature-cutoff view zeroes")
    remove_dropout: bool = key("BERT's own dropout off (the authors: only the unsupervised run from BERT)")
    lr: Positive = key("the peak learning rate (linear warm-up, then linear decay)")
    batch_size: AtLeastOne = key("texts (or NLI pairs) per step")
    epochs: AtLeastOne = key("passes over the training texts")
    patience: AtLeastOne | None = key("evaluations without a gain before stopping; None: never stop early")
    classifier_features: tuple[Literal[CLASSIFIER_FEATURES], ...] = key(
        "NLI classifier input (the authors add max(u, v)^2)"
    )
    classifier_bias: bool = key("SBERT's classifier has one; BERT-flow's NLI classifier has none")
    classifier_init_std: float | None = key("None: nn.Linear's init; else a normal truncated at 2 SD", gt=0)
    final_state: Literal["best", "last"] = key('"best" dev checkpoint (ConSERT), or "last" (BERT-flow\'s NLI encoder)')
    # stage-dependent as well, the same for every ConSERT stage (consert.train.recipes.COMMON); the contrastive
    # family's methods have their own values
    temperature: Temperature = key("the NT-Xent / InfoNCE temperature")
    contrastive_weight: float = key("cl_rate: times the sum of both directions' NT-Xent, even when alone", ge=0)
    loss: Literal[LOSSES] = key('"nt_xent" (ConSERT), "infonce" (SimCSE), "infonce_symmetric" (AugCSE)')
    projection: Literal[PROJECTIONS] = key('training-only head: "mlp" (SimCSE\'s Linear + Tanh), "bn_mlp" (AugCSE\'s)')


def _settings_help(name: str, settings: type[Settings]) -> str:
    """The help of a method's own settings key: whose they are, and their keys."""
    method = MODES[name]
    keys = ", ".join(settings.model_fields)
    return f"{method.label}'s own settings (objective {method.recipe['objective']}), a mapping over the stage's: {keys}"


#: The methods' own settings, one key each under the method's name, from their records (``TrainableMode.settings``):
#: a method with settings needs no field written here.
_WithMethodSettings = create_model(
    "_WithMethodSettings",
    __base__=_RunKeys,
    __module__=__name__,
    **{name: (settings, key(_settings_help(name, settings))) for name, settings in sub_configs().items()},
)


class TrainConfig(_WithMethodSettings):
    """Everything that decides a ConSERT training run; a method's own settings are a key of it under the method's
    name, from the method's record."""

    weight_decay: float = key("AdamW's weight decay (not on biases and LayerNorm weights)", ge=0)
    adam_eps: float = key("AdamW's epsilon", gt=0)
    adam_bias_correction: bool = key("ConSERT: transformers.AdamW(correct_bias=False)")
    warmup_ratio: Ratio = key("the share of the planned steps spent warming the learning rate up")
    eval_every: AtLeastOne = key("steps between two STS-B dev evaluations")
    eval_grid: Literal[EVAL_GRIDS] = key(
        '"epoch": every eval_every steps within each epoch + each epoch\'s end (ConSERT)'
    )
    max_length: Tokens = key("tokens per training text, [CLS] and [SEP] included")
    eval_max_length: Tokens | None = key("dev and test encoding (None: max_length; SimCSE: no truncation)")
    train_pooling: str = key("the pooling of the training views (the objective's sentence vectors)")
    dev_pooling: str = key("checkpoint selection (ConSERT: the model's own last-layer mean)")
    eval_pooling: str = key("the reported test numbers (ConSERT: the last two layers' mean)")
    dropout: Ratio = key("the dropout view's rate")
    adversarial_epsilon: float = key("the adversarial view's perturbation norm (joint mode's 'adversarial' view)", ge=0)
    max_grad_norm: float = key("gradient clipping norm", gt=0)
    max_steps: AtLeastOne | None = key("stop after this many steps (null: the epochs' length); for smoke runs", None)
    eval_at_start: bool = key("sentence-transformers (the authors' code) first evaluates after eval_every steps", False)
    dev_max_pairs: AtLeastOne | None = key("evaluate on the first n STS-B dev pairs only (fast smoke runs)", None)
    seed: int = key("the run's seed (data order, views, initialisation of the heads)")
    dtype: Literal[DTYPE_CHOICES] = key(
        "the precision measured fastest on this machine (consert.encode.precision)", "auto"
    )
    compile: AutoOnOff = key(
        'torch.compile the training forward: "auto" (CUDA runs of 500+ steps not replayed as CUDA graphs), "on" (under'
        ' CUDA graphs: each layer\'s per-token chain fused, consert.train.fused), "off"',
        "auto",
    )
    packed: OnOff = key('"on": the training passes\' dense layers on real tokens only (consert.train.packed)', "off")
    cuda_graphs: AutoOnOff = key(
        'the packed step (contrastive, NLI, joint) as CUDA graphs: "auto" (CUDA runs of 500+ steps), "on", "off"',
        "auto",
    )
    checkpoint_every: str = key(
        'a resumable checkpoint beside the output every N steps ("500") or minutes ("15min"), which a preempted or '
        'killed run resumes from (consert.train.resume); "off": none',
        "15min",
    )
    device: str | None = key("cpu or cuda (null: cuda when available)", None)
    data: str | None = key("the SentEval data folder (null: looked for as every command looks; docs: Data)", None)
    train_texts: str = key('"sts" (the 89,192 unlabeled STS texts) or a file with one text a line', "sts")
    n_texts: AtLeastOne | None = key("few-shot: the first n of the training texts shuffled with the run's seed", None)
    upsample: bool = key("few-shot: repeat the n texts int(corpus / n) times (main.py --do_upsampling)", True)
    nli_source: Literal[NLI_SOURCES] = key(
        "the NLI pairs of sup/joint: sick-e (SICK's entailment labels, offline) or snli+mnli (nli_files)", "sick-e"
    )
    nli_files: list[str] = key("the SNLI/MultiNLI jsonl files read when nli_source is snli+mnli", factory=list)
    stage1: dict[str, Any] = key("overrides of a two-stage mode's first stage", factory=dict)
    stage1_model: str | None = key("a trained first stage: the second stage starts from it", None)

    #: Keys a two-stage run's first stage inherits (the rest come from its own stage and ``stage1``).
    NOT_INHERITED: ClassVar[frozenset[str]] = frozenset(
        {*consert_stage_keys(), "mode", "output_dir", "max_steps", "n_texts", "train_texts", "stage1", "stage1_model"}
    )

    @model_validator(mode="before")
    @classmethod
    def _stage_values(cls, values: Any) -> Any:
        """The mode's stage values under what the config gives (a sub-config's keys over the stage's)."""
        if not isinstance(values, dict):
            return values
        mode = values.get("mode", cls.model_fields["mode"].default)
        _choice("mode", mode, loop_modes())
        stage = stage_defaults(mode)
        given = {
            name: {**stage[name], **value} if name in sub_configs() and isinstance(value, dict) else value
            for name, value in values.items()
        }
        return {**stage, **given}

    @model_validator(mode="after")
    def _checked(self) -> TrainConfig:
        check_train_config(self)
        return self

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
        shared = {name: getattr(self, name) for name in type(self).model_fields if name not in self.NOT_INHERITED}
        values = {
            **shared,
            "mode": MODES[self.mode].first_stage,
            "output_dir": f"{self.output_dir}.stage1",
            **self.stage1,
        }
        return TrainConfig.from_dict(values, source="stage1")

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for JSON/YAML records); a sub-config as its mapping."""
        values = self.model_dump()
        values["views"] = list(self.views)
        values["classifier_features"] = list(self.classifier_features)
        for name in sub_configs():  # a sub-config's tuples as lists, as YAML and JSON write them
            values[name] = {key: list(v) if isinstance(v, tuple) else v for key, v in values[name].items()}
        return values

    def flat(self) -> dict[str, Any]:
        """Every setting by its own name, a sub-config's keys beside the others (what the recipe card compares)."""
        settings = sub_configs()
        values = {name: getattr(self, name) for name in type(self).model_fields if name not in settings}
        for name, cls in settings.items():
            values.update((key, getattr(getattr(self, name), key)) for key in cls.model_fields)
        return values


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


def check_train_config(config: TrainConfig) -> None:
    """What the keys' types cannot say of ``config`` (its stage defaults filled in), checked: a :class:`ConfigError`
    names the first key that is wrong, what it holds and what was expected."""
    for name in sub_configs():  # a method's own settings, where they do anything, need its objective
        settings, owner = getattr(config, name), MODES[name].recipe["objective"]
        if settings.in_use and config.objective != owner:
            raise ConfigError(f"{name}: {settings.in_use} needs objective {owner!r}, not {config.objective!r}")
    try:
        check_every(config.checkpoint_every)
    except ValueError as err:
        raise ConfigError(f"checkpoint_every: {err}") from None
    if len(config.views) != 2:
        raise ConfigError(f"views: expected two augmentation names, got {list(config.views)}")
    for view in config.views:
        try:
            check_augmentation(view)
        except ValueError as err:
            raise ConfigError(f"views: {err}") from None
    if "adversarial" in config.views and config.mode != "joint":
        raise ConfigError("views: 'adversarial' needs the supervised loss; use it with mode 'joint' only")
    for name in ("train_pooling", "dev_pooling", "eval_pooling"):
        try:
            kind = Pooling.parse(getattr(config, name)).kind
        except ValueError as err:
            raise ConfigError(f"{name}: {err}") from None
        if kind == POOLER:
            raise ConfigError(f"{name}: {POOLER} is an evaluation pooling (the pooler is not trained or exported)")
    if (config.stage1 or config.stage1_model) and not config.two_stage:
        two_stage = tuple(name for name in loop_modes() if MODES[name].first_stage)
        raise ConfigError(f"stage1/stage1_model: only for the two-stage modes {two_stage}, not {config.mode!r}")
    if config.stage1:
        config.first_stage()  # validate the overrides now, not after the first stage has trained


def _choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{name}: expected one of {choices}, got {value!r}")


def load_train_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """The training config from a YAML file (optional) with ``key=value`` overrides applied on top; a fault names
    the file and line, or ``--set``, that gave its key."""
    return read_settings(TrainConfig, path, overrides or [])[0]
