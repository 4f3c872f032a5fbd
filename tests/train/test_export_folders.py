"""An export writes only into its folder and deletes nothing of the user's (issue 77): over an earlier export only
the harness's files are replaced, the user's kept (an export older than the record's file list included); a user's
file under a name the export writes is refused before any work; a link is written through; a killed export's staging
folder is cleared by the next run, the user's files in it put back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consert.train.export import (
    RECORD_FILES,
    STAGING_MARKER,
    TRAINING_RECORD,
    check_export_target,
    export_model,
    exported_files,
)
from tests.fixtures import tiny_bert


@pytest.fixture(scope="module")
def tiny():
    """A tiny BERT and the stand-in's tokenizer (its vocabulary)."""
    from transformers import AutoTokenizer

    from consert.encode.models import STAND_IN_MODEL, resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(STAND_IN_MODEL).path)
    return tiny_bert(tokenizer.vocab_size, 32, 1, 4, 64)[1], tokenizer


def export(tiny, folder: Path, step: int) -> Path:
    model, tokenizer = tiny
    return export_model(model, tokenizer, folder, pooling="mean", max_length=16, record={"best_step": step}, log=[])


def test_overwriting_an_export_replaces_the_harness_files_and_keeps_the_users(tiny, tmp_path):
    """At 03ef47f `consert train --overwrite` removed the whole folder: a notes.txt the user had put there was gone."""
    folder = export(tiny, tmp_path / "model", 1)
    written = json.loads((folder / TRAINING_RECORD).read_text())[RECORD_FILES]
    assert "model.safetensors" in written and "1_Pooling/config.json" in written and TRAINING_RECORD in written
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "mine").mkdir()
    (folder / "mine" / "plot.png").write_bytes(b"\x89PNG")
    check_export_target(folder, overwrite=True)
    export(tiny, folder, 2)
    assert (folder / "notes.txt").read_text() == "my notes\n"
    assert (folder / "mine" / "plot.png").read_bytes() == b"\x89PNG"
    assert json.loads((folder / TRAINING_RECORD).read_text())["best_step"] == 2
    assert exported_files(folder) == set(written)  # the same export, the user's files not among the harness's
    assert not list(tmp_path.glob(".model.*"))  # no staging folder left
    from sentence_transformers import SentenceTransformer

    assert SentenceTransformer(str(folder), device="cpu").encode(["a test ."]).shape == (1, 32)


def test_an_export_older_than_the_file_list_keeps_the_users_files_too(tiny, tmp_path):
    folder = export(tiny, tmp_path / "model", 1)
    record = json.loads((folder / TRAINING_RECORD).read_text())
    del record[RECORD_FILES]  # as every export before the list
    (folder / TRAINING_RECORD).write_text(json.dumps(record))
    (folder / "notes.txt").write_text("kept\n")
    assert "notes.txt" not in exported_files(folder) and "modules.json" in exported_files(folder)
    export(tiny, folder, 2)
    assert (folder / "notes.txt").read_text() == "kept\n"


def test_a_users_file_under_a_name_the_export_writes_is_refused_before_any_work(tiny, tmp_path):
    folder = export(tiny, tmp_path / "model", 1)
    (folder / "2_Dense").mkdir()
    (folder / "2_Dense" / "config.json").write_text("{}")  # not the harness's: its record does not list it
    with pytest.raises(OSError, match=r"2_Dense/config.json is not the harness's but has the name of a file the"):
        check_export_target(folder, overwrite=True)
    assert (folder / "2_Dense" / "config.json").read_text() == "{}"


def test_an_output_folder_that_is_a_link_is_written_through(tiny, tmp_path):
    """At 03ef47f: training ran, then `Cannot call rmtree on a symbolic link`, and the trained model was gone."""
    real = tmp_path / "disk" / "model"
    real.mkdir(parents=True)
    link = tmp_path / "model"
    link.symlink_to(real)
    assert check_export_target(link) == real
    export(tiny, link, 1)
    export(tiny, link, 2)  # over the earlier export, through the link
    assert link.is_symlink() and (real / "model.safetensors").is_file()
    assert json.loads((link / TRAINING_RECORD).read_text())["best_step"] == 2
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OSError, match="a link to .*nowhere, which does not exist"):
        check_export_target(dangling)


def test_a_killed_exports_staging_folder_is_cleared_with_the_users_files_put_back(tiny, tmp_path):
    """What a kill -9 leaves (at 03ef47f: an 87 MB hidden staging folder nothing removed). Killed while the new
    export was written: the old folder as it was, and a staging folder the next run's check removes. Killed once it
    was complete, the user's file moved into it and the old folder gone: the next run's check finishes the rename, the
    user's file in the export folder. Another hidden folder beside it, without the marker, is not the harness's."""
    folder = export(tiny, tmp_path / "model", 1)
    (folder / "notes.txt").write_text("mine\n")
    writing = tmp_path / ".model.killed-writing.staging"
    writing.mkdir()
    (writing / "config.json").write_text("{}")
    (writing / STAGING_MARKER).write_text(json.dumps({"target": str(folder), "complete": False}))
    other = tmp_path / ".model.someone-elses"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    check_export_target(folder, overwrite=True)
    assert not writing.exists() and (folder / "notes.txt").read_text() == "mine\n" and (other / "keep.txt").exists()
    renaming = tmp_path / ".model.killed-renaming.staging"
    export(tiny, tmp_path / "next", 2).rename(renaming)
    (folder / "notes.txt").rename(renaming / "notes.txt")
    (renaming / STAGING_MARKER).write_text(json.dumps({"target": str(folder), "complete": True}))
    for name in exported_files(folder):
        (folder / name).unlink()
    for sub in sorted(folder.rglob("*"), reverse=True):
        sub.rmdir()
    folder.rmdir()
    check_export_target(folder, overwrite=True)
    assert not renaming.exists() and (folder / "notes.txt").read_text() == "mine\n"
    assert json.loads((folder / TRAINING_RECORD).read_text())["best_step"] == 2
    assert (other / "keep.txt").read_text() == "x"
