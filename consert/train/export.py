"""Saving a trained encoder in sentence-transformers' format, atomically, with its training record.

An export is written into a staging folder beside its target (``.NAME.*`` holding the marker file
:data:`STAGING_MARKER`) and renamed into place. Over an earlier export (``--overwrite``) only the files the harness
wrote are replaced (the record lists them, :data:`RECORD_FILES`; an export older than the list holds the files
:data:`EXPORT_NAMES` names): once the new export is complete (the marker says so), the user's other files are moved
into the staging folder, the old export's files removed, and the folder renamed into place; a run killed at any
moment leaves either the old folder as it was (and a staging folder the next run removes) or a complete staging
folder holding the user's files, which the next run finishes renaming (:func:`restore_killed_export`). A target
that is a link is written through: the export goes where it points."""

from __future__ import annotations

import json
import re
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
#: The training record's list of the files the export wrote (paths below the folder).
RECORD_FILES = "files"
#: The file that marks a staging folder as the harness's, with the user's files moved into it (JSON).
STAGING_MARKER = ".consert-staging"
#: What a harness export holds, by path below its folder: the transformers files (config, weights, tokenizer),
#: sentence-transformers' (``modules.json``, its modules' folders), the record, the log and the model card.
EXPORT_NAMES = re.compile(
    r"(config\.json|model\.safetensors|pytorch_model\.bin|generation_config\.json|tokenizer(_config)?\.json"
    r"|special_tokens_map\.json|added_tokens\.json|vocab\.(txt|json)|merges\.txt|(sentencepiece\.bpe|spiece)\.model"
    r"|chat_template\.jinja|modules\.json|sentence_bert_config\.json|config_sentence_transformers\.json|README\.md"
    rf"|{re.escape(TRAINING_RECORD)}|{re.escape(TRAINING_LOG)}"
    r"|\d+_(Pooling|WeightedLayerPooling|Dense|Normalize)/.+)"
)


def exported_files(folder: Path) -> set[str]:
    """The files of the export in ``folder`` that the harness wrote, by path below it: its record's list, or (an
    export written before the list) the files :data:`EXPORT_NAMES` names."""
    files = {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file() or path.is_symlink()}
    try:
        listed = json.loads((folder / TRAINING_RECORD).read_text()).get(RECORD_FILES)
    except (OSError, ValueError, AttributeError):
        listed = None
    if isinstance(listed, list):
        return files & {str(name) for name in listed}
    return {name for name in files if EXPORT_NAMES.fullmatch(name)}


def _staging_folders(target: Path) -> list[Path]:
    """The harness's staging folders beside ``target`` (a killed run's included): marked, named ``.NAME.*``."""
    return [path for path in target.parent.glob(f".{target.name}.*") if (path / STAGING_MARKER).is_file()]


def restore_killed_export(target: Path) -> None:
    """Settle the staging folders a killed export left beside ``target``: one whose export was complete (its marker
    says so, written before any file of the user's moved into it) is finished, as the killed run would have (the
    user's files still in ``target`` moved in, the old export's files removed, one rename); one that was still being
    written holds nothing of the user's, and is removed."""
    for staging in _staging_folders(target):
        marker = staging / STAGING_MARKER
        if not _complete(marker):
            shutil.rmtree(staging)
            continue
        if target.exists():
            _take_over(target, staging, marker)
        marker.unlink()
        staging.rename(target)


def check_export_target(output_dir: str | Path, overwrite: bool = False) -> Path:
    """Refuse, before any training, a folder an export may not write: it must be absent, empty, or (with
    ``overwrite``) an earlier export of the harness (its training record says so), holding no file of the user's
    under a name the export writes. A link is followed: the folder it points to is checked, and written. Staging
    folders a killed export left are cleared first (the user's files in them put back). Then probe that the
    folder's parent takes a folder. Returns the folder the export will be written to. A folder holding anything
    else is never deleted, and no file of the user's ever is."""
    given = Path(output_dir)
    target = given.resolve() if given.is_symlink() else given
    if given.is_symlink() and not target.exists():
        raise OSError(f"output_dir {given}: a link to {target}, which does not exist")
    if target.exists() and not target.is_dir():
        raise OSError(f"output_dir {given}: is a file, not a folder")
    if target.parent.is_dir():
        restore_killed_export(target)
    if target.is_dir() and any(target.iterdir()):
        if not (target / TRAINING_RECORD).is_file():
            raise OSError(
                f"output_dir {given}: holds files the harness did not write (no {TRAINING_RECORD}); "
                "choose another folder, or empty this one yourself"
            )
        if not overwrite:
            raise OSError(f"output_dir {given}: holds an earlier export; pass --overwrite to replace it")
        theirs = sorted(_user_files(target) - exported_files(target))
        clash = [name for name in theirs if EXPORT_NAMES.fullmatch(name)]
        if clash:
            raise OSError(
                f"output_dir {given}: {clash[0]} is not the harness's but has the name of a file the export writes; "
                "move it, or choose another folder"
            )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryDirectory(prefix=f".{target.name}.", suffix=".probe", dir=target.parent).cleanup()
    except OSError as err:
        raise OSError(f"output_dir {given}: cannot be written there ({err.strerror or err})") from None
    return target


def _user_files(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file() or path.is_symlink()}


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
    target = check_export_target(output_dir, overwrite=True)  # a link's folder; a killed export's staging cleared
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".staging", dir=target.parent))
    marker = staging / STAGING_MARKER
    marker.write_text(json.dumps({"target": str(target), "complete": False}))
    try:
        if spec.needs_all_hidden_states:  # sentence-transformers passes them on only when the config asks
            model.config.output_hidden_states = True
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        transformer = models.Transformer(str(staging), max_seq_length=max_length)
        modules = [transformer, *sentence_transformers_pooling(spec, transformer, models)]
        SentenceTransformer(modules=modules, device="cpu").save(str(staging))
        (staging / TRAINING_LOG).write_text(json.dumps(log, indent=1))
        (staging / CARD).write_text(model_card(record), encoding="utf-8")
        written = sorted({*_user_files(staging), TRAINING_RECORD} - {STAGING_MARKER})
        (staging / TRAINING_RECORD).write_text(json.dumps({**record, RECORD_FILES: written}, indent=2, default=str))
        _readable_as_umask_says(staging)
        if target.exists():
            _take_over(target, staging, marker)  # marks the export complete, then empties the folder
        marker.unlink()
        staging.rename(target)
    finally:
        if staging.exists():  # an error, or an interrupt, before the rename
            if _complete(marker):
                restore_killed_export(target)  # the user's files may be in it: finish as a killed run's next would
            else:
                shutil.rmtree(staging, ignore_errors=True)  # still being written: nothing of the user's in it
    return target


def _complete(marker: Path) -> bool:
    """Whether a staging folder's marker says its export is complete (the user's files may have moved into it)."""
    try:
        return bool(json.loads(marker.read_text()).get("complete"))
    except (OSError, ValueError, AttributeError):
        return False


def _take_over(target: Path, staging: Path, marker: Path) -> None:
    """Empty ``target`` for the complete export in ``staging``: the marker says the export is complete, then the
    user's files move into ``staging``, then the harness's old files are removed (its record last, so that a run
    killed meanwhile still tells them from the user's), then the folder itself."""
    ours = exported_files(target) if (target / TRAINING_RECORD).is_file() else set()
    theirs = sorted(_user_files(target) - ours)
    clash = [name for name in theirs if (staging / name).exists()]
    if clash:  # check_export_target refused these names; one may have appeared since
        raise OSError(f"output_dir {target}: {clash[0]} is not the harness's and the export writes it; not replaced")
    marker.write_text(json.dumps({"target": str(target), "complete": True}))
    for name in theirs:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).rename(staging / name)
    for name in sorted(ours, key=lambda name: name == TRAINING_RECORD):
        (target / name).unlink()
    for folder in sorted((path for path in target.rglob("*") if path.is_dir()), key=lambda p: -len(p.parts)):
        folder.rmdir()  # what is left is empty folders: every file was moved or was the harness's
    target.rmdir()


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
