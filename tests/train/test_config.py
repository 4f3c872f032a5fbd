"""Training configs: YAML reading, overrides, and clear errors for bad keys or values."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consert.configs import ConfigError
from consert.train.config import MIN_MAX_LENGTH, TrainConfig, load_train_config


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
    ("text", "message"),
    [
        # PyYAML's own messages: context and problem, each with its position and a caret, over 4-7 lines
        (
            "mode: unsup\nviews: [shuffle\nseed: 1\n",
            r"c\.yaml:3: not valid YAML: while parsing a flow sequence \(from line 2\), ",
        ),
        ("lr: 1.0e-5\n mode: unsup\n", r"c\.yaml:2: not valid YAML: mapping values are not allowed here$"),
        ('output_dir: "runs/a\n', r"c\.yaml:2: not valid YAML: while scanning a quoted scalar \(from line 1\)"),
        # PyYAML's reader names no file and gives a character offset; a list as a key broke the duplicate check
        (
            "mode: unsup\nlr: 1\x00\n",
            r"c\.yaml:2: not valid YAML: character #x0000: special characters are not allowed$",
        ),
        (
            "mode: unsup\n[lr]: 1\n",
            r"c\.yaml:2: not valid YAML: while constructing a mapping \(from line 1\), found unhash",
        ),
        (b"mode: unsup\n\nlr: \xff\n", r"c\.yaml:3: not UTF-8 text \(byte 0xff\); expected a YAML file$"),
    ],
)
def test_malformed_yaml_is_one_line_naming_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError, match=message) as fault:
        load_train_config(path)
    assert "\n" not in str(fault.value)


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
        ("views=[shuffle, token_cutoff", r"--set 'views=\[shuffle, token_cutoff': the value is not valid YAML \("),
    ],
)
def test_bad_values_are_clear_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        load_train_config(None, [override])


# ---- every key type-checked when the config is read (issue: no bad value runs silently) ----------


BOOL_KEYS = ["adam_bias_correction", "classifier_bias", "eval_at_start", "remove_dropout", "upsample"]
INT_KEYS = ["batch_size", "dev_max_pairs", "epochs", "eval_every", "eval_max_length", "max_length", "max_steps",
            "n_texts", "patience", "seed"]  # fmt: skip
LIST_KEYS = ["classifier_features", "nli_files", "views"]


def test_the_typed_key_lists_are_every_such_key_of_the_config():
    """The lists above are written out, so that a key whose type changes (a bound, null allowed) stays checked: each
    names keys of TrainConfig, and every key whose default is a bool, int or list is in its list."""
    defaults = {name: getattr(TrainConfig(), name) for name in TrainConfig.model_fields}
    assert {k for k, v in defaults.items() if isinstance(v, bool)} == set(BOOL_KEYS)
    assert {k for k, v in defaults.items() if isinstance(v, int) and not isinstance(v, bool)} <= set(INT_KEYS)
    assert {k for k, v in defaults.items() if isinstance(v, tuple | list)} == set(LIST_KEYS)
    assert set(BOOL_KEYS + INT_KEYS + LIST_KEYS) <= set(defaults)


@pytest.mark.parametrize(("key", "value"), [("remove_dropout", "false"), ("eval_at_start", "no"), ("seed", 1.9)])
def test_the_reported_silent_values_are_errors(key, value):
    with pytest.raises(ConfigError, match=f"{key}: expected .*{value!r}"):
        TrainConfig.from_dict({"model": "m", "output_dir": "o", key: value})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("max_steps", -5, "positive integer or null"),
        ("dev_max_pairs", 0, "positive integer or null"),
        ("batch_size", 4.5, "an integer"),
        ("lr", [1e-5], "a number"),
        ("max_length", MIN_MAX_LENGTH - 1, f"at least {MIN_MAX_LENGTH}"),
    ],
)
def test_out_of_range_and_mistyped_numbers_are_errors(key, value, expected):
    with pytest.raises(ConfigError, match=expected):
        TrainConfig.from_dict({"model": "m", "output_dir": "o", key: value})


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(BOOL_KEYS),
    value=st.one_of(st.sampled_from(["false", "no", "off", "true", "0"]), st.integers(0, 1), st.floats(0, 1)),
)
def test_bool_keys_take_only_booleans(key, value):
    with pytest.raises(ConfigError, match=f"{key}: expected true or false"):
        TrainConfig.from_dict({"model": "m", "output_dir": "o", key: value})


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(INT_KEYS),
    value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != int(v)),
        st.booleans(),
        st.text(alphabet="abcxyz", min_size=1),
        st.lists(st.integers(), min_size=1),
    ),
)
def test_int_keys_reject_fractions_bools_words_and_lists(key, value):
    with pytest.raises(ConfigError, match=f"{key}: expected"):
        TrainConfig.from_dict({"model": "m", "output_dir": "o", key: value})


@settings(max_examples=30, deadline=None)
@given(key=st.sampled_from(LIST_KEYS), value=st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans()))
def test_list_keys_reject_scalars(key, value):
    with pytest.raises(ConfigError, match=f"{key}: expected a list"):
        TrainConfig.from_dict({"model": "m", "output_dir": "o", key: value})


def test_well_typed_values_still_load():
    config = TrainConfig.from_dict(
        {"model": "m", "output_dir": "o", "remove_dropout": False, "seed": 3, "lr": "5e-7", "max_steps": None}
    )
    assert (config.remove_dropout, config.seed, config.lr, config.max_steps) == (False, 3, 5e-7, None)


def test_the_temperature_is_declared_once_and_each_config_refuses_a_non_positive_one():
    """The training config, SG-OPT's and Figure 7's sweep take one declared type for the temperature
    (``consert.configs.Temperature``, above 0); each refuses 0 in the same words."""
    from baselines.sgopt import SgOptConfig
    from consert.configs import Temperature
    from consert.planner.keys import SweepKeys

    assert TrainConfig.model_fields["temperature"].annotation is float  # pydantic unwraps the Annotated type ...
    for owner in (TrainConfig, SgOptConfig):  # ... and keeps its bound, which is Temperature's
        assert owner.model_fields["temperature"].metadata == Temperature.__metadata__[0].metadata
    assert SweepKeys.model_fields["temperatures"].annotation == list[Temperature]
    for build in (
        lambda: TrainConfig.from_dict({"temperature": 0}),
        lambda: SgOptConfig.from_dict({"model": "m", "output_dir": "o", "temperature": 0}),
    ):
        with pytest.raises(ConfigError, match="temperature: expected a positive number, got 0"):
            build()


@pytest.mark.parametrize(
    ("given", "expected"),
    [("on", "on"), ("off", "off"), ("true", "on"), ("false", "off"), ('"on"', "on"), ('"false"', "off")],
)
def test_switches_take_on_off_true_false_from_set_and_files_alike(tmp_path, given, expected):
    """The Training page writes `packed: on`; YAML 1.1 reads it as true. At 03ef47f `--set packed=on` was refused:
    "packed: expected one of 'on' or 'off', got True". Each is normalised to the string on/off."""
    assert load_train_config(None, [f"packed={given}"]).packed == expected
    assert load_train_config(None, [f"compile={given}", f"cuda_graphs={given}"]).compile == expected
    path = tmp_path / "train.yaml"
    path.write_text(f"packed: {given}\ncuda_graphs: {given}\n")
    config = load_train_config(path)
    assert (config.packed, config.cuda_graphs) == (expected, expected)
    assert config.to_dict()["packed"] == expected  # the resolved file and the record write the string
    assert load_train_config(None, ["compile=auto"]).compile == "auto"


def test_a_fault_names_where_its_value_was_given_the_set_flag_or_the_files_line(tmp_path):
    """At 03ef47f a bad `--set` value was blamed on the YAML file the other keys came from."""
    path = tmp_path / "train.yaml"
    path.write_text("# a comment\nlr: 1.0e-5\nstage1:\n  lr: 2.0e-5\n")
    with pytest.raises(ConfigError, match=r"^--set: packed: expected one of 'on' or 'off', got 'maybe'$"):
        load_train_config(path, ["packed=maybe"])
    path.write_text("lr: 1.0e-5\naugcse:\n  discriminator_dropout: 0.1\n  discriminator_weight: -1\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:4: augcse.discriminator_weight: expected a"):
        load_train_config(path)  # a settings check's own line, prefixed with where its key is
    path.write_text("# a comment\nlr: 1.0e-5\npacked: maybe\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:3: packed: expected one of 'on' or 'off'"):
        load_train_config(path, ["lr=2e-5"])
    path.write_text("lr: 1.0e-5\nmax_steps: true\n")  # a boolean for a number: the check before pydantic's own
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:2: max_steps: expected an integer, got True"):
        load_train_config(path)
    with pytest.raises(ConfigError, match=r"^--set: max_steps: expected an integer, got True"):
        load_train_config(path, ["max_steps=true"])
