"""Saving a trained encoder in sentence-transformers' format, atomically, with its training record."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from consert.encode.pooling import Pooling
from consert.io import current_umask, write_text

TRAINING_RECORD = "consert_training.json"
TRAINING_LOG = "training_log.json"


def check_export_target(output_dir: str | Path, overwrite: bool = False) -> Path:
    """Refuse, before any training, a folder an export may not replace: it must be absent, empty, or (with
    ``overwrite``) an earlier export of the harness (its training record says so). Then probe that the
    folder's parent takes a folder. A folder holding anything else is never deleted."""
    target = Path(output_dir)
    if target.exists() and not target.is_dir():
        raise OSError(f"output_dir {target}: is a file, not a folder")
    if target.is_dir() and any(target.iterdir()):
        if not (target / TRAINING_RECORD).is_file():
            raise OSError(
                f"output_dir {target}: holds files the harness did not write (no {TRAINING_RECORD}); "
                "choose another folder, or empty this one yourself"
            )
        if not overwrite:
            raise OSError(f"output_dir {target}: holds an earlier export; pass --overwrite to replace it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryDirectory(prefix=f".{target.name}.", suffix=".probe", dir=target.parent).cleanup()
    except OSError as err:
        raise OSError(f"output_dir {target}: cannot be written there ({err.strerror or err})") from None
    return target


def sentence_transformers_pooling(spec: Pooling, transformer, models) -> list[nn.Module]:
    """The sentence-transformers modules that pool as ``spec`` does: ``cls`` and ``mean`` by ``Pooling``;
    ``mean:I,J,...`` by ``WeightedLayerPooling`` (weight 1 on hidden states I, J, ..., 0 elsewhere: their
    average) and then ``Pooling`` in mean mode."""
    import torch

    dimension = transformer.get_embedding_dimension()
    pooling = models.Pooling(dimension, pooling_mode=spec.kind)
    if not spec.needs_all_hidden_states:
        return [pooling]
    states = transformer.auto_model.config.num_hidden_layers + 1  # the embedding output, then each layer
    spec.check_layers(states)
    layers = sorted({layer % states for layer in spec.layers})
    start = layers[0]
    weights = torch.zeros(states - start)
    weights[[layer - start for layer in layers]] = 1.0
    weighted = models.WeightedLayerPooling(
        dimension, num_hidden_layers=states - 1, layer_start=start, layer_weights=nn.Parameter(weights)
    )
    return [weighted, pooling]


def export_model(
    model: nn.Module,
    tokenizer,
    output_dir: str | Path,
    *,
    pooling: str,
    max_length: int,
    record: dict[str, Any],
    log: list[dict[str, Any]],
) -> Path:
    """Save ``model`` so that ``SentenceTransformer(output_dir)`` loads it with ``pooling`` (any of
    :class:`~consert.encode.pooling.Pooling`'s, layer averages included: :func:`sentence_transformers_pooling`).

    Also writes ``consert_training.json`` (config, base model, best step and score),
    ``training_log.json`` (one entry per step) and the model card (:mod:`consert.train.model_card`). The folder
    appears complete or not at all: it is written beside the target and renamed into place.
    """
    from sentence_transformers import SentenceTransformer

    from consert.train.model_card import CARD, model_card

    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:  # older releases
        from sentence_transformers import models

    spec = Pooling.parse(pooling)
    target = Path(output_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        if spec.needs_all_hidden_states:  # sentence-transformers passes them on only when the config asks
            model.config.output_hidden_states = True
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        transformer = models.Transformer(str(staging), max_seq_length=max_length)
        modules = [transformer, *sentence_transformers_pooling(spec, transformer, models)]
        SentenceTransformer(modules=modules, device="cpu").save(str(staging))
        (staging / TRAINING_RECORD).write_text(json.dumps(record, indent=2, default=str))
        (staging / TRAINING_LOG).write_text(json.dumps(log, indent=1))
        (staging / CARD).write_text(model_card(record), encoding="utf-8")
        _readable_as_umask_says(staging)
        if target.exists():  # only an export of the harness (check_export_target refused anything else)
            if any(target.iterdir()) and not (target / TRAINING_RECORD).is_file():
                raise OSError(f"output_dir {target}: holds files the harness did not write; not replaced")
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def _readable_as_umask_says(folder: Path) -> None:
    """Folders and files as ``mkdir`` and ``open`` make them under the user's umask: ``mkdtemp`` made the folder
    0700 and transformers writes the weights 0600, which would keep colleagues from loading the model."""
    mask = current_umask()
    folder.chmod(0o777 & ~mask)
    for path in folder.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


def write_model_card(folder: str | Path, scores=None) -> Path:
    """Write ``folder``'s model card from its training record and, once evaluated, its ``scores`` (the frame of
    :func:`consert.evaluate.protocol.evaluate_model`), atomically and under the user's umask; return its path."""
    from consert.train.model_card import CARD, model_card

    folder = Path(folder)
    record = json.loads((folder / TRAINING_RECORD).read_text())
    return write_text(model_card(record, scores), folder / CARD)


@dataclass(frozen=True)
class CardTarget:
    """A harness export's model card: its ``path``, the ``pooling`` the export is saved with (its record's
    ``eval_pooling``; None when the record does not say), and whether the card is ``marked`` as the harness's
    (:data:`consert.train.model_card.CARD_MARKER`; exports older than the marker are not)."""

    path: Path
    pooling: str | None
    marked: bool


def card_to_update(folder: str | Path) -> CardTarget | None:
    """The model card of ``folder`` when ``folder`` is a harness export (it has a training record and a card);
    None otherwise (a hub id, another model's folder)."""
    from consert.train.model_card import CARD, is_harness_card

    folder = Path(folder)
    record_path, card = folder / TRAINING_RECORD, folder / CARD
    if not (record_path.is_file() and card.is_file()):
        return None
    try:
        pooling = json.loads(record_path.read_text()).get("eval_pooling")
        marked = is_harness_card(card.read_text(encoding="utf-8"))
    except (ValueError, AttributeError, OSError):  # a record or card the harness cannot read is not its own
        return None
    return CardTarget(card, str(pooling) if pooling else None, marked)


def update_model_card(folder: str | Path, scores) -> Path:
    """Put ``scores`` (an evaluation frame of the 7 test sets) into the harness's model card of ``folder``: its
    ``model-index`` and its results section, the rest of the card as it is (hand edits kept). Written
    atomically (a temporary file renamed onto the card) under the user's umask. Raise ValueError when the card
    is not the harness's (:func:`card_to_update`), which is then left untouched; return its path."""
    from consert.train.model_card import with_scores

    target = card_to_update(folder)
    if target is None or not target.marked:
        raise ValueError(f"{Path(folder)}: no model card written by the harness's export; not updated")
    record = json.loads((Path(folder) / TRAINING_RECORD).read_text())
    return write_text(with_scores(target.path.read_text(encoding="utf-8"), record, scores), target.path)
