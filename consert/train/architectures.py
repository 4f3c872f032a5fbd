"""The encoder architectures the trainer trains, declared once (:data:`ARCHITECTURES`): how ConSERT's views reach
each, and which fast paths are proven on it. The Training page's table is generated from it
(:func:`architecture_table`); ``tests/train/test_architectures.py`` holds every row to its claims on a tiny random
model of its architecture.

Every view acts where BERT's does, on the input of the first encoder layer: the output of the embedding module, or
of ELECTRA's ``embeddings_project`` where its embedding size differs from its hidden size. The shuffle view permutes
the model's *own* position ids among each sentence's real tokens, where the model reads them (its absolute position
embeddings' lookup, or ModernBERT's rotary embedding): RoBERTa's and XLM-R's start at ``padding_idx + 1``, and
stay theirs. An architecture with relative positions only (DeBERTa-v3: no absolute positions) has nothing to
shuffle: a recipe that asks for the shuffle view is refused before any work. The packed step (real tokens only, and
so the CUDA graphs, which pack) and compilation run only on the architectures whose test proves them equal to the
eager forward: BERT's layer structure, which RoBERTa, XLM-R and ELECTRA share. Elsewhere the step runs eagerly, and
the run's record says why.

``consert evaluate`` takes any encoder transformers or sentence-transformers loads: this table is about training.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from consert.configs import ConfigError


@dataclass(frozen=True)
class Architecture:
    """One architecture the trainer trains, by transformers' ``model_type``: where its position ids are read
    (``positions``: a module's dotted path below the model and the index of the argument that carries them), and
    whether its step may pack (``packed``: BERT's layers, proven equal to the eager forward; CUDA graphs replay the
    packed step) and compile (``compiled``). ``notes``: what the table says beside it."""

    model_type: str
    title: str
    positions: tuple[str, int] = ("embeddings.position_embeddings", 0)
    packed: bool = False
    compiled: bool = False
    notes: str = ""
    #: The config key that, false, leaves the architecture without absolute positions (DeBERTa's
    #: ``position_biased_input``); None: it always has them.
    absolute_positions_key: str | None = None

    def has_absolute_positions(self, config: Any) -> bool:
        """Whether a model of this config reads absolute position ids (so that the shuffle view changes it)."""
        return self.absolute_positions_key is None or bool(getattr(config, self.absolute_positions_key, True))


#: Every architecture the trainer trains, in the table's order.
ARCHITECTURES: dict[str, Architecture] = {
    architecture.model_type: architecture
    for architecture in (
        Architecture("bert", "BERT", packed=True, compiled=True, notes="the paper's encoder"),
        Architecture("roberta", "RoBERTa", packed=True, compiled=True, notes="position ids from padding_idx + 1, kept"),
        Architecture(
            "xlm-roberta", "XLM-RoBERTa", packed=True, compiled=True, notes="position ids from padding_idx + 1, kept"
        ),
        Architecture(
            "electra",
            "ELECTRA",
            packed=True,
            compiled=True,
            notes="the views act after embeddings_project where the embedding size differs from the hidden size",
        ),
        Architecture("distilbert", "DistilBERT", notes="no token types; its own layers: eager only"),
        Architecture(
            "deberta-v2",
            "DeBERTa-v2/v3",
            notes="relative attention; shuffle only with absolute positions (position_biased_input, v2): v3 has none",
            absolute_positions_key="position_biased_input",
        ),
        Architecture(
            "modernbert",
            "ModernBERT",
            positions=("rotary_emb", 1),
            notes="rotary positions: the shuffle permutes the rotary embedding's position ids",
        ),
        Architecture("mpnet", "MPNet", notes="its relative position bias stays unshuffled (computed from the length)"),
    )
}


def architecture_of(config: Any, model: str = "") -> Architecture:
    """The table's row of a model's transformers config; a one-line :class:`ConfigError` naming the model, its
    ``model_type`` and the architectures the trainer trains when the table has none."""
    model_type = getattr(config, "model_type", None)
    if model_type not in ARCHITECTURES:
        trains = ", ".join(f"{a.title} ({a.model_type})" for a in ARCHITECTURES.values())
        raise ConfigError(
            f"model {model or '?'}: the trainer does not train {model_type!r} encoders (their views and paths are not "
            f"proven); it trains {trains}. `consert evaluate` takes it as it is"
        )
    return ARCHITECTURES[model_type]


def trainable_config(path: str | Path, model: str = "") -> Any:
    """The transformers config of the model folder ``path`` (``model``: its name in a fault), once its architecture
    is checked to be the table's (:func:`architecture_of`): read before any weights are."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path)
    architecture_of(config, model or str(path))
    return config


def _module(model: nn.Module, path: str) -> nn.Module | None:
    found: Any = model
    for part in path.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, nn.Module) else None


def position_reader(model: nn.Module) -> tuple[nn.Module, int] | None:
    """The module of ``model`` that reads its position ids and the index of the argument that carries them; None
    where it has no absolute positions (DeBERTa-v3: ``position_biased_input`` false, no position embeddings)."""
    path, argument = architecture_of(model.config).positions
    module = _module(model, path)
    return (module, argument) if module is not None else None


def first_layer_input(model: nn.Module) -> nn.Module:
    """The module whose output is the first encoder layer's input: ELECTRA's ``embeddings_project`` where it has one
    (its embedding size differs from its hidden size), else the embedding module."""
    for path in ("embeddings_project", "embeddings"):
        module = _module(model, path)
        if module is not None:
            return module
    raise ValueError(f"{type(model).__name__} has no embedding module; ConSERT's views need one")


def embed(model: nn.Module, input_ids) -> Any:
    """The first encoder layer's input (B x L x hidden) of ``input_ids``: the embedding module, then ELECTRA's
    projection where it has one (the packed step's start; the views' hooks act within)."""
    embedded = model.embeddings(input_ids=input_ids)
    project = _module(model, "embeddings_project")
    return project(embedded) if project is not None else embedded


def view_fault(config: Any, views: tuple[str, ...], model: str = "") -> str:
    """Why ``views`` cannot train a model of transformers ``config`` as they say ("" when they can): the shuffle view
    on an architecture with relative positions only would change nothing."""
    architecture = architecture_of(config, model)
    if "shuffle" in views and not architecture.has_absolute_positions(config):
        return (
            f"views: shuffle permutes position ids, and {model or 'this model'} ({architecture.title}, "
            f"{architecture.absolute_positions_key} false) has relative positions only: it would change nothing"
        )
    return ""


def fast_path_fault(config: Any, path: str) -> str:
    """Why the ``path`` (``packed``, ``cuda_graphs``, which pack, or ``compile``) may not run a model of transformers
    ``config`` ("" when it may): it is not proven equal to the eager forward on its architecture."""
    architecture = architecture_of(config)
    proven = architecture.compiled if path == "compile" else architecture.packed
    if proven:
        return ""
    return f"{architecture.title}'s {path} step is not proven equal to its eager forward (BERT's layers only)"


def architecture_table() -> str:
    """The Training page's table: each architecture, the views it supports, the fast paths it may take."""
    header = "| architecture | `model_type` | views | packed step, CUDA graphs | compiled | notes |"
    rows = [header, "|---|---|---|---|---|---|"]
    for a in ARCHITECTURES.values():
        views = "all" if a.absolute_positions_key is None else f"all; shuffle only where `{a.absolute_positions_key}`"
        packed, compiled = ("proven" if flag else "eager only" for flag in (a.packed, a.compiled))
        rows.append(f"| {a.title} | `{a.model_type}` | {views} | {packed} | {compiled} | {a.notes} |")
    return "\n".join(rows) + "\n"
