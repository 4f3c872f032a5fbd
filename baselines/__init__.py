"""Baselines of the ConSERT paper (BERT pooling, whitening, flow, SG-OPT, GloVe, top-k masking).

:data:`BASELINE_SPECS` is the one list of the baselines ``consert baseline NAME`` evaluates, one
:class:`BaselineSpec` each (as :data:`consert.train.objectives.OBJECTIVES` is of the training objectives).
A record names its class as ``"module:Class"``, imported only when it is built: the command line imports this
package at startup, and the classes import torch.
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
    #: The :class:`~baselines.base.BaselineOptions` fields it is built with besides the pooled vectors, so the
    #: command line reads (and checks) only the settings the baseline uses.
    reads: tuple[str, ...] = ()
    #: How many times a ``task`` fit sees each text of an STS12-16 year set. BERT-flow's STS12-16
    #: "train+dev+test" is one file (full.txt) given as train, dev and test: it fits on every sentence three
    #: times in its one epoch.
    year_passes: int = 1

    def resolve(self) -> type:
        """The class :attr:`embedder` names (importing its module: torch, for some)."""
        module, _, name = self.embedder.partition(":")
        return getattr(importlib.import_module(module), name)


#: Every baseline ``consert baseline`` evaluates, by name (SG-OPT trains: ``consert sgopt``).
BASELINE_SPECS: dict[str, BaselineSpec] = {
    spec.name: spec
    for spec in (
        BaselineSpec("pooling", "baselines.pooling:PoolingBaseline"),
        BaselineSpec(
            "whitening", "baselines.whitening:WhiteningBaseline", fit_on=("task", "nli"), reads=("whitening_k",)
        ),
        BaselineSpec("flow", "baselines.flow:FlowBaseline", fit_on=("task", "sts"), reads=("flow",), year_passes=3),
        BaselineSpec("glove", "baselines.glove:GloveBaseline", needs_encoder=False, reads=("glove_path",)),
    )
}

#: The baselines' names, the choices of ``consert baseline NAME``.
BASELINES = tuple(BASELINE_SPECS)


def baseline_spec(name: str) -> BaselineSpec:
    """The record of baseline ``name``; an unknown name is a one-line :class:`ValueError`."""
    found = BASELINE_SPECS.get(name)
    if found is None:
        raise ValueError(f"unknown baseline {name!r}; choose from {BASELINES} (SG-OPT trains: `consert sgopt`)")
    return found
