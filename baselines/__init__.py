"""Baselines of the ConSERT paper (BERT pooling, whitening, flow, SG-OPT, GloVe, top-k masking).

:data:`BASELINE_SPECS` is the one list of the baselines ``consert baseline NAME`` evaluates, one
:class:`BaselineSpec` each (as :data:`consert.train.objectives.OBJECTIVES` is of the training objectives).
A record names its class as ``"module:Class"``, imported only when it is built: the command line imports this
package at startup, and the classes import torch. A record that names a :attr:`~BaselineSpec.table` is evaluated by
the workflow's one rule for such baselines (``eval_baseline``), its rows one per size added to that table, its
settings read from the config's block under its name (``baselines.<name>``): a new baseline is its module and its
record.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class BaselineSpec:
    """One baseline: what builds it, whether it needs an encoder, and what it may be fitted on."""

    #: The name ``consert baseline NAME`` takes.
    name: str
    #: ``"module:Class"`` of its :class:`~baselines.base.SentenceEmbedder`, whose classmethod
    #: ``build(vectors, options)`` makes it from the encoder's cached pooled vectors (None without an encoder)
    #: and a :class:`~baselines.base.BaselineOptions`.
    embedder: str
    #: Whether it is built on an encoder's pooled vectors (``consert baseline`` then loads ``--model``).
    needs_encoder: bool = True
    #: What it may be fitted on, the authors' first (the default); empty for a method without parameters.
    #: ``task``: one fit per task on that task's scored pairs (the authors of BERT-flow and BERT-whitening);
    #: ``sts``: one fit on the 89,192 unlabeled STS texts; ``nli``: one fit on NLI sentences (BERT-whitening's
    #: "NLI" variant).
    fit_on: tuple[str, ...] = ()
    #: How many times a ``task`` fit sees each text of an STS12-16 year set. BERT-flow's STS12-16
    #: "train+dev+test" is one file (full.txt) given as train, dev and test: it fits on every sentence three
    #: times in its one epoch.
    year_passes: int = 1
    #: ``"module:Class"`` of its own settings, a :class:`consert.configs.Settings` whose every key has its default
    #: and help text ("" for none): ``consert baseline NAME --set KEY=VALUE`` and the config's ``baselines.<name>``
    #: block set them, and the class is built with them (:attr:`baselines.base.BaselineOptions.settings`). Its
    #: module imports no torch (the command line and the workflow's check read it at their start).
    settings: str = ""
    #: The key of the table its rows join, one per size of the config, through the workflow's ``eval_baseline``
    #: rule ("" for the paper's baselines, whose rules and rows are their own).
    table: str = ""
    #: Its rows' method label in that table (:func:`consert.row_labels.baseline`: ``BERT-base-ABTT``).
    label: str = ""

    def __post_init__(self) -> None:
        if self.table and not (self.label and self.needs_encoder):
            raise ValueError(f"baseline {self.name!r}: a table's baseline has a label and reads the encoder's vectors")
        if self.table and self.fit_on[:1] == ("nli",):  # eval_baseline passes no NLI files: SICK-E would stand in
            raise ValueError(f"baseline {self.name!r}: a table's baseline is fitted on a task's pairs or the STS texts")

    def resolve(self) -> type:
        """The class :attr:`embedder` names (importing its module: torch, for some)."""
        return _named(self.embedder)

    def settings_class(self) -> type | None:
        """Its settings class (:attr:`settings`), or None where it takes none."""
        return _named(self.settings) if self.settings else None


def _named(reference: str) -> type:
    """The object ``"module:Name"`` names, its module imported."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


#: Every baseline ``consert baseline`` evaluates, by name (SG-OPT trains: ``consert sgopt``).
BASELINE_SPECS: dict[str, BaselineSpec] = {
    spec.name: spec
    for spec in (
        BaselineSpec("pooling", "baselines.pooling:PoolingBaseline"),
        BaselineSpec(
            "whitening",
            "baselines.whitening:WhiteningBaseline",
            fit_on=("task", "nli"),
            settings="baselines.whitening:WhiteningSettings",
        ),
        BaselineSpec(
            "flow",
            "baselines.flow:FlowBaseline",
            fit_on=("task", "sts"),
            year_passes=3,
            settings="baselines.flow_settings:FlowSettings",
        ),
        BaselineSpec(
            "glove", "baselines.glove:GloveBaseline", needs_encoder=False, settings="baselines.glove:GloveSettings"
        ),
    )
}

#: The baselines' names, the choices of ``consert baseline NAME``.
BASELINES = tuple(BASELINE_SPECS)


def in_table(key: str) -> list[BaselineSpec]:
    """The records whose rows join the table ``key`` through the workflow's ``eval_baseline`` rule, in their order."""
    return [spec for spec in BASELINE_SPECS.values() if spec.table == key]


#: The records the workflow's ``eval_baseline`` rule evaluates: those of a table.
TABLED = tuple(spec.name for spec in BASELINE_SPECS.values() if spec.table)


def baseline_spec(name: str) -> BaselineSpec:
    """The record of baseline ``name``; an unknown name is a one-line :class:`ValueError`."""
    found = BASELINE_SPECS.get(name)
    if found is None:
        raise ValueError(f"unknown baseline {name!r}; choose from {BASELINES} (SG-OPT trains: `consert sgopt`)")
    return found
