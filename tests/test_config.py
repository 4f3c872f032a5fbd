"""Training configs: YAML reading, overrides, and clear errors for bad keys or values."""

from __future__ import annotations

import pytest

from consert.config import ConfigError, TrainConfig, load_train_config


def test_yaml_and_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("mode: joint\nlr: 5e-7\nviews: [adversarial, shuffle]\nbatch_size: 32\n")
    config = load_train_config(path, ["batch_size=8", "temperature=0.05"])
    assert config.mode == "joint" and config.lr == 5e-7 and isinstance(config.lr, float)
    assert config.views == ("adversarial", "shuffle") and config.batch_size == 8 and config.temperature == 0.05


def test_defaults_are_the_papers():
    config = TrainConfig()
    assert (config.lr, config.batch_size, config.temperature, config.max_length) == (5e-7, 96, 0.1, 64)
    # scripts/unsup-consert-base.sh: --da_final_1 feature_cutoff --da_final_2 shuffle, --no_dropout
    assert config.views == ("feature_cutoff", "shuffle") and config.remove_dropout
    assert (config.token_cutoff, config.feature_cutoff, config.dropout) == (0.15, 0.2, 0.2)
    assert (config.eval_every, config.patience, config.warmup_ratio, config.contrastive_weight) == (200, 10, 0.1, 0.15)


def test_duplicate_key_names_file_and_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("lr: 1.0e-5\nmode: unsup\nlr: 2.0e-5\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:3: duplicate key 'lr'"):
        load_train_config(path)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("learning_rate=1", "unknown key"),
        ("mode=semi", "mode: expected one of"),
        ("views=[shuffle]", "two augmentation names"),
        ("views=[shuffle, blur]", "unknown augmentation 'blur'"),
        ("views=[adversarial, shuffle]", "mode 'joint' only"),
        ("batch_size=0", "batch_size: expected a positive integer"),
        ("lr=fast", "lr: expected a number"),
        ("eval_pooling=max", "eval_pooling: unknown pooling"),
        ("feature_cutoff=1.5", "feature_cutoff: expected a ratio"),
    ],
)
def test_bad_values_are_clear_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        load_train_config(None, [override])
