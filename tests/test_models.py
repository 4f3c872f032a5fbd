"""Model resolution: local folders and packaged weights offline; a clear error otherwise."""

from __future__ import annotations

import pytest

from consert.encode.models import STAND_IN_MODEL, ModelNotAvailableError, resolve_model


def test_stand_in_resolves_offline_to_the_packaged_weights():
    resolved = resolve_model(STAND_IN_MODEL)
    assert (resolved.path / "config.json").is_file()
    assert resolved.is_stand_in and "offline stand-in" in resolved.setting


def test_local_directory_is_used_as_is():
    folder = resolve_model(STAND_IN_MODEL).path
    resolved = resolve_model(str(folder))
    assert resolved.path == folder.resolve()


def test_unavailable_hub_model_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(ModelNotAvailableError, match="huggingface-cli download bert-base-uncased"):
        resolve_model("bert-base-uncased")


def test_cli_reports_bad_model_as_one_line_error(tmp_path, monkeypatch, capsys, tiny_tree):
    from consert.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert main(["evaluate", "bert-base-uncased", "--data", str(tiny_tree)]) == 2
    assert "error: model 'bert-base-uncased'" in capsys.readouterr().err
