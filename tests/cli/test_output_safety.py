"""Outputs never delete what the harness did not write, are refused before any work, and are readable by
others as the user's umask says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from consert.cli import main as cli_main
from consert.io import write_text
from consert.train.export import TRAINING_RECORD, check_export_target


def _train(output_dir, data, *extra: str) -> int:
    return cli_main(
        ["train", "--set", f"output_dir={output_dir}", "--set", f"data={data}", "--set", "max_steps=1", *extra]
    )


def test_a_folder_holding_a_users_file_survives_train_which_refuses_it_in_one_line(tmp_path, capsys):
    """Refused before any work: the data named does not exist, and the error is the folder's."""
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text("\\documentclass{article}")
    assert _train(folder, tmp_path / "no-data") == 2
    error = capsys.readouterr().err.strip()
    assert (folder / "thesis.tex").read_text() == "\\documentclass{article}" and len(list(folder.iterdir())) == 1
    assert "\n" not in error and "holds files the harness did not write" in error and str(folder) in error
    assert _train(folder, tmp_path / "no-data", "--overwrite") == 2 and (folder / "thesis.tex").is_file()


def test_an_earlier_export_is_replaced_only_when_asked_and_an_empty_or_absent_folder_is_fine(tmp_path):
    export = tmp_path / "runs" / "mine"
    export.mkdir(parents=True)
    (export / TRAINING_RECORD).write_text("{}")
    with pytest.raises(OSError, match="holds an earlier export; pass --overwrite"):
        check_export_target(export)
    assert check_export_target(export, overwrite=True) == export
    (tmp_path / "empty").mkdir()
    assert check_export_target(tmp_path / "empty") == tmp_path / "empty"
    assert check_export_target(tmp_path / "new" / "model") == tmp_path / "new" / "model"
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OSError, match="is a file, not a folder"):
        check_export_target(tmp_path / "a-file")


def test_an_output_dir_that_cannot_be_written_is_refused_before_training(tmp_path, capsys):
    assert _train("/proc/x", tmp_path / "no-data") == 2
    assert "output_dir /proc/x: cannot be written there" in capsys.readouterr().err


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_results_take_the_users_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        path = write_text("x,y\n", tmp_path / "results" / "table.csv")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_an_exported_model_folder_takes_the_users_umask(tmp_path):
    from transformers import AutoTokenizer

    from consert.encode.models import STAND_IN_MODEL, resolve_model
    from consert.train.export import export_model
    from tests import fixtures

    _, model = fixtures.tiny_bert(vocab_size=30522, hidden_size=32, layers=2, heads=2, intermediate_size=64)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(STAND_IN_MODEL).path)
    previous = os.umask(0o022)
    try:
        folder = export_model(model, tokenizer, tmp_path / "model", pooling="mean", max_length=32, record={}, log=[])
    finally:
        os.umask(previous)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o044 == 0o044 for p in Path(folder).rglob("*") if p.is_file())
