"""Reliability: data integrity, fuzzed loaders, numerical faults, nothing half-written, offline runs."""

from __future__ import annotations

import socket

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consert.cli import main
from consert.data.senteval import DataFormatError, DataIntegrityError, load_senteval
from consert.train.config import TrainConfig
from consert.train.loop import TrainingFault

STS12 = ("downstream", "STS", "STS12-en-test")


def test_real_data_matches_the_manifest(real_data):
    assert real_data.verified


def test_modified_file_is_reported_by_name(real_data_dir, tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "senteval"
    shutil.copytree(real_data_dir, copy)
    gold = copy / "downstream" / "STS" / "STS13-en-test" / "STS.gs.FNWN.txt"
    gold.write_text("\n".join(gold.read_text().splitlines()[:-1] + ["0.0"]) + "\n")  # one changed score
    monkeypatch.delenv("CONSERT_ALLOW_UNVERIFIED_DATA", raising=False)
    with pytest.raises(DataIntegrityError, match=r"STS/STS13-en-test/STS\.gs\.FNWN\.txt: sha256"):
        load_senteval(copy)
    data = load_senteval(copy, allow_unverified=True)  # the explicit override
    assert not data.verified


def test_bad_data_leaves_no_output(tiny_tree, tmp_path):
    (tiny_tree / "downstream" / "SICK" / "SICK_test_annotated.txt").write_text("pair_ID\tsentence_A\n1\tx\n")
    out = tmp_path / "table1.csv"
    assert main(["table1", "--data", str(tiny_tree), "--output", str(out)]) == 2
    assert not out.exists() and list(tmp_path.glob("*.tmp")) == [] and list(tmp_path.glob(".table1*")) == []


_lines = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40), min_size=0, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inputs=_lines, golds=_lines, raw=st.binary(max_size=64))
def test_fuzzed_sts_files_parse_or_raise_our_error(tmp_path_factory, inputs, golds, raw):
    from tests.fixtures import write_senteval_tree

    tree = write_senteval_tree(tmp_path_factory.mktemp("fuzz") / "senteval", pairs_per_file=2)
    folder = tree.joinpath(*STS12)
    (folder / "STS.input.MSRpar.txt").write_text("\n".join(inputs), encoding="utf-8")
    (folder / "STS.gs.MSRpar.txt").write_text("\n".join(golds), encoding="utf-8")
    (folder / "STS.input.MSRvid.txt").write_bytes(raw + b"\tb\n")
    try:
        data = load_senteval(tree)
    except DataFormatError as err:
        assert err.path.name.startswith("STS.")
    else:
        assert all(0 <= p.score <= 5 for p in data.sets["STS12"].groups["MSRpar"])


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=200))
def test_fuzzed_config_yaml_loads_or_raises_config_error(tmp_path_factory, text):
    from consert.train.config import ConfigError, load_train_config

    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_train_config(path)
    except ConfigError:
        pass


def _short(tmp_path, **changes) -> TrainConfig:
    values = dict(output_dir=str(tmp_path / "model"), batch_size=8, max_steps=3, eval_every=3, dev_max_pairs=30)
    values.update(changes)
    return TrainConfig(**values)


def test_non_finite_loss_stops_training_without_export(real_data, tmp_path):
    from consert.train.trainer import train

    with pytest.raises(TrainingFault, match=r"step 1: loss is (nan|inf)"):
        train(_short(tmp_path, lr=1.0, temperature=1e-45), real_data, progress=False)
    assert not (tmp_path / "model").exists()


def test_collapsed_embedding_stops_training(real_data, tmp_path, monkeypatch):
    from consert.train import encoder as encoder_module
    from consert.train import trainer as train_module

    original = encoder_module.TrainedEncoder.__init__

    def collapse(self, *args, **kwargs):  # a model whose every sentence vector is the same
        original(self, *args, **kwargs)
        with torch.no_grad():
            for layer in self.model.encoder.layer:
                layer.output.dense.weight.zero_()
                layer.output.dense.bias.zero_()
                layer.output.LayerNorm.weight.zero_()
                layer.output.LayerNorm.bias.fill_(1.0)
            self.model.requires_grad_(False)
            self.model.pooler = None

    monkeypatch.setattr(encoder_module.TrainedEncoder, "__init__", collapse)
    with pytest.raises(TrainingFault, match="embedding collapsed"):
        train_module.train(_short(tmp_path, eval_at_start=True), real_data, progress=False)
    assert not (tmp_path / "model").exists()


@pytest.fixture()
def no_network(monkeypatch):
    """Every attempt to open a socket fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the guarantee must not depend on it


def test_evaluation_and_training_run_with_the_network_blocked(no_network, tiny_tree, tmp_path):
    assert (
        main(
            [
                "evaluate",
                "sentence-transformers/all-MiniLM-L6-v2",
                "--data",
                str(tiny_tree),
                "--output",
                str(tmp_path / "eval.csv"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "train",
                "--set",
                f"data={tiny_tree}",
                "--set",
                "max_steps=2",
                "--set",
                "batch_size=4",
                "--set",
                "eval_every=2",
                "--set",
                f"output_dir={tmp_path / 'model'}",
            ]
        )
        == 0
    )
    assert (tmp_path / "model" / "modules.json").is_file()


def test_nli_jsonl_loader(tmp_path):
    from consert.data.nli import load_nli_jsonl

    path = tmp_path / "snli.jsonl"
    path.write_text(
        '{"gold_label": "entailment", "sentence1": "A  man.", "sentence2": "A person."}\n'
        '{"gold_label": "-", "sentence1": "x", "sentence2": "y"}\n\n'
        '{"gold_label": "contradiction", "sentence1": "A", "sentence2": "B"}\n'
    )
    pairs = load_nli_jsonl(path)
    assert [(p.premise, p.label) for p in pairs] == [("A man.", "ENTAILMENT"), ("A", "CONTRADICTION")]
    path.write_text('{"gold_label": "entailment", "sentence1": "A"}\n')
    with pytest.raises(DataFormatError, match=r"snli\.jsonl:1: expected a JSON object with sentence1"):
        load_nli_jsonl(path)
    path.write_text('{"gold_label": "maybe", "sentence1": "A", "sentence2": "B"}\n')
    with pytest.raises(DataFormatError, match=r"snli\.jsonl:1: expected gold_label"):
        load_nli_jsonl(path)
    path.write_text("")
    with pytest.raises(DataFormatError, match="no labelled pairs"):
        load_nli_jsonl(path)
    with pytest.raises(DataFormatError, match="file not found"):
        load_nli_jsonl(tmp_path / "missing.jsonl")
