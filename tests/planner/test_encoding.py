"""The encoding settings travel as one resolved file (``results/encoding_config.yaml``), as BERT-flow's do: what the
workflow resolves from its config is what each command reads back, a flag given on the command line wins over
the file, and a fault in either is one line before any work."""

from __future__ import annotations

import argparse

import pytest

from consert.cli import main, parse
from consert.configs import ConfigError
from consert.encode.models import STAND_IN_MODEL
from consert.planner.encoding import EncodingSettings
from consert.planner.load import read_workflow_config
from tests.conftest import ROOT


def test_the_test_configs_encoding_is_its_poolings_then_those_flow_and_whitening_fit_on(tmp_path):
    """config/test.yaml: poolings ["mean:-2,-1", cls]; the keys' defaults give whitening ["mean:1,-1",
    "mean:-2,-1"] and flow "mean:1,-1"; no train.max_length, so the authors' 64; topk_max 3."""
    settings = EncodingSettings.of_workflow(read_workflow_config(ROOT / "config" / "test.yaml"))
    assert settings == EncodingSettings(
        dtype="auto",
        max_length=64,
        poolings=["mean:-2,-1", "cls"],
        cache_poolings=["mean:-2,-1", "cls", "mean:1,-1"],
        topk_max=3,
    )
    path = tmp_path / "encoding_config.yaml"
    path.write_text(settings.to_yaml(), encoding="utf-8")
    assert EncodingSettings.read(path) == settings


def test_the_paper_configs_cache_holds_each_pooling_once():
    settings = EncodingSettings.of_workflow(read_workflow_config(ROOT / "config" / "config.yaml"))
    # config/config.yaml: cls, mean, mean:-2,-1, mean:0,-1, mean:1,-1; flow and whitening add none
    assert settings.cache_poolings == ["cls", "mean", "mean:-2,-1", "mean:0,-1", "mean:1,-1"]
    assert settings.max_length == 64 and settings.topk_max == 50


def test_a_workflow_pooling_the_harness_does_not_know_is_named_by_its_config_key():
    config = read_workflow_config(ROOT / "config" / "test.yaml")
    baselines = config.baselines.model_copy(update={"whitening_poolings": ["mean:1,-1", "first_last"]})
    config = config.model_copy(update={"baselines": baselines})
    with pytest.raises(ConfigError, match=r"^baselines\.whitening_poolings: unknown pooling 'first_last'"):
        EncodingSettings.of_workflow(config)


def _settings_file(tmp_path, **values) -> str:
    path = tmp_path / "encoding_config.yaml"
    base = EncodingSettings(dtype="bf16", max_length=32, poolings=["cls"], cache_poolings=["cls", "mean"], topk_max=7)
    path.write_text(EncodingSettings(**{**base.__dict__, **values}).to_yaml(), encoding="utf-8")
    return str(path)


def _parsed(argv: list[str]) -> argparse.Namespace:
    _, args = parse(argv)
    return args


def test_each_command_takes_its_keys_of_the_file(tmp_path):
    settings = ["--encoding-config", _settings_file(tmp_path)]
    encode = _parsed(["encode", STAND_IN_MODEL, "--output", "c.npz", *settings])
    assert (encode.dtype, encode.max_length, encode.pooling) == ("bf16", 32, ["cls", "mean"])  # the cache's
    evaluate = _parsed(["evaluate", STAND_IN_MODEL, *settings])
    assert (evaluate.dtype, evaluate.max_length, evaluate.pooling) == ("bf16", 32, ["cls"])  # the evaluated ones
    assert _parsed(["topk", STAND_IN_MODEL, *settings]).max_k == 7
    assert _parsed(["baseline", "flow", *settings]).dtype == "bf16"
    predictions = _parsed(["predictions", STAND_IN_MODEL, "--output", "p.csv", *settings])
    assert (predictions.dtype, predictions.max_length) == ("bf16", 32)


def test_a_flag_given_wins_over_the_file_even_at_its_default_and_replaces_a_list(tmp_path):
    settings = ["--encoding-config", _settings_file(tmp_path)]
    args = _parsed(["encode", STAND_IN_MODEL, "--output", "c.npz", "--dtype", "auto", "--pooling", "mean", *settings])
    assert (args.dtype, args.max_length, args.pooling) == ("auto", 32, ["mean"])  # not bf16, not [cls, mean, mean]
    assert _parsed(["topk", STAND_IN_MODEL, "--max-k", "50", *settings]).max_k == 50
    # without the file, each command's own defaults
    plain = _parsed(["evaluate", STAND_IN_MODEL])
    assert (plain.dtype, plain.max_length) == ("auto", 64)


def test_a_fault_in_the_file_is_one_line_naming_the_flag_and_the_key(tmp_path, capsys):
    path = tmp_path / "encoding_config.yaml"
    path.write_text("dtype: bf16\nmax_len: 32\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", STAND_IN_MODEL, "--encoding-config", str(path)])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1
    assert "--encoding-config" in err and "unknown key `max_len` (did you mean `max_length`?)" in err
    path.write_text("max_length: 4\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["evaluate", STAND_IN_MODEL, "--encoding-config", str(path)])
    assert "max_length: expected at least 8, got 4" in capsys.readouterr().err


def _own_settings(argv: list[str]):
    """The settings ``consert baseline`` builds its baseline with from ``argv``."""
    from baselines import baseline_spec
    from consert.cli.baseline import own_settings

    args = _parsed(argv)
    return own_settings(baseline_spec(args.name), args)


def test_glove_reads_a_file_or_the_offline_stand_in():
    assert _own_settings(["baseline", "glove", "--glove", "glove.840B.300d.txt"]).path == "glove.840B.300d.txt"
    assert _own_settings(["baseline", "glove", "--glove", "offline"]).path is None  # the PyPI stand-in
    assert _own_settings(["baseline", "glove"]).path is None


def test_whitening_keeps_all_dimensions_or_k_of_them(tmp_path):
    assert _own_settings(["baseline", "whitening", "--k", "all"]).k is None
    assert _own_settings(["baseline", "whitening", "--k", "16"]).k == 16
    assert _own_settings(["baseline", "whitening"]).k is None
    settings = tmp_path / "whitening.yaml"
    settings.write_text("k: 256\n")
    assert _own_settings(["baseline", "whitening", "--settings", str(settings)]).k == 256
    assert _own_settings(["baseline", "whitening", "--settings", str(settings), "--k", "all"]).k is None  # flag wins
