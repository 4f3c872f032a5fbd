"""Model resolution: local folders and packaged weights offline; a clear error otherwise."""

from __future__ import annotations

from pathlib import Path

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
    with pytest.raises(ModelNotAvailableError, match="hf download bert-base-uncased"):
        resolve_model("bert-base-uncased")


def test_cli_reports_bad_model_as_one_line_error(tmp_path, monkeypatch, capsys, tiny_tree):
    from consert.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert main(["evaluate", "bert-base-uncased", "--data", str(tiny_tree)]) == 2
    assert "error: model 'bert-base-uncased'" in capsys.readouterr().err


def test_a_rehearsal_model_in_the_hub_cache_resolves_by_its_hub_id_and_says_so(tmp_path):
    """The rehearsal's tiny random BERT, cached under `bert-base-uncased`, is found offline as a user's cached
    model is (a fresh process: huggingface_hub reads its cache folder at import), and its rows (and those of
    models trained from it, whose config keeps the key) say rehearsal."""
    import json
    import os
    import subprocess
    import sys

    from consert.encode.models import REHEARSAL_LABEL
    from tests.rehearsal import hub_cache

    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache(tmp_path)), "HF_HUB_OFFLINE": "1"}
    code = "from consert.encode.models import resolve_model; m = resolve_model('bert-base-uncased'); print(m.path)"
    code += "; print(m.setting)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    path, setting = out.strip().splitlines()
    assert Path(path).parent.parent.name == "models--bert-base-uncased" and setting == REHEARSAL_LABEL
    config = json.loads((Path(path) / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["model_type"]) == (32, 2, "bert")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "consert_rehearsal"}))
    assert resolve_model(str(plain)).setting == "paper setting (model as named)"
    assert resolve_model(path).setting == REHEARSAL_LABEL


def test_a_generated_glove_file_is_labelled_a_rehearsal(tmp_path):
    from baselines.glove import OFFLINE_GLOVE_LABEL, glove_setting

    glove = tmp_path / "glove.840B.300d.txt"
    glove.write_text("")
    assert glove_setting(glove) == "paper setting (GloVe file as given)" and glove_setting(None) == OFFLINE_GLOVE_LABEL
    (tmp_path / "glove.840B.300d.txt.rehearsal").write_text("")
    assert glove_setting(glove).startswith("rehearsal")
