"""Faults in training: fuzzed configs, a non-finite loss, a collapsed embedding; nothing is exported."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from consert.train.config import TrainConfig
from consert.train.loop import TrainingFault


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=200))
def test_fuzzed_config_yaml_loads_or_raises_config_error(tmp_path_factory, text):
    """Any text is a config that validates or one ConfigError, on one line, that names the file or a key."""
    from consert.configs import ConfigError
    from consert.train.config import load_train_config
    from consert.train.modes import loop_modes

    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        config = load_train_config(path)
    except ConfigError as err:
        message = str(err)
        assert message and (path.name in message or ":" in message) and "\n" not in message, message
    else:
        assert config.mode in loop_modes() and config.batch_size >= 1 and len(config.views) == 2


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
    from consert.train import trained_encoder as encoder_module
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
