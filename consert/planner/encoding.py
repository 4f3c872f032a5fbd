"""How the workflow's jobs encode, as one resolved file (``results/encoding_config.yaml``): every job that encodes
the STS texts or reads a vector cache takes it (``--encoding-config``), so that every reader of a cache encodes
as its writer did, and no rule builds a command's flags from the config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import model_validator

from consert.configs import ConfigError, ResolvedFile, key
from consert.encode.pooling import MODEL_POOLING, Pooling
from consert.encode.precision import DTYPE_CHOICES
from consert.train.config import Tokens
from consert.train.recipes import COMMON

if TYPE_CHECKING:
    from consert.planner.keys import WorkflowConfig


class EncodingSettings(ResolvedFile):
    """The encoding a workflow config gives its evaluation and baseline jobs; each command takes the keys it
    uses (``consert encode --help`` and the others list them) and a flag given on its command line wins."""

    dtype: Literal[DTYPE_CHOICES] = key(
        "precision of every encoding (auto: the fastest measured on the machine)", "auto"
    )
    max_length: Tokens = key("tokens per sentence, [CLS] and [SEP] included (the training max_length)", 64)
    poolings: list[str] = key("the poolings BERT is evaluated with untrained (Table 2's rows)", factory=list)
    cache_poolings: list[str] = key(
        "the poolings a corpus vector cache holds: those above, then those BERT-flow and whitening are fitted on",
        factory=list,
    )
    topk_max: int = key("the largest k of Figure 4's curve (tokens removed by frequency)", 50)

    @model_validator(mode="after")
    def _checked(self) -> EncodingSettings:
        if self.topk_max < 0:
            raise ConfigError(f"topk_max: must be 0 or more, got {self.topk_max}")
        check_poolings("poolings", self.poolings, evaluated=True)
        check_poolings("cache_poolings", self.cache_poolings)
        return self

    @classmethod
    def of_workflow(cls, config: WorkflowConfig) -> EncodingSettings:
        """The settings a workflow config gives its jobs: one max length for every
        encoding (the training runs'), and a corpus cache holding every pooling a job reads from it."""
        baselines = config.baselines
        check_poolings("baselines.poolings", baselines.poolings, evaluated=True)
        check_poolings("baselines.whitening_poolings", baselines.whitening_poolings)
        check_poolings("baselines.flow_pooling", [baselines.flow_pooling])
        poolings = list(baselines.poolings)
        cached = [p for p in poolings if p != MODEL_POOLING]
        return cls.from_dict(
            {
                "dtype": config.dtype,
                "max_length": config.train.get("max_length", COMMON["max_length"]),
                "poolings": poolings,
                "cache_poolings": list(dict.fromkeys([*cached, baselines.flow_pooling, *baselines.whitening_poolings])),
                "topk_max": baselines.topk_max,
            },
            source="config",
        )


def check_poolings(name: str, poolings: list[str], evaluated: bool = False) -> None:
    """Each of ``poolings`` a pooling the harness knows (``evaluated``: also ``model``, the model's own modules,
    which are evaluated and never cached); else a one-line :class:`ConfigError` naming ``name``."""
    for pooling in poolings:
        if evaluated and pooling == MODEL_POOLING:
            continue
        try:
            Pooling.parse(pooling)
        except ValueError as err:
            raise ConfigError(f"{name}: {err}") from None
