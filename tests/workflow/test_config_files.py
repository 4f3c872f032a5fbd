"""Every file under config/ loads: the workflow configs pass the schema (and plan their runs), the training
configs build a TrainConfig; no file repeats a value it could drift from."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from snakemake.utils import validate

from consert.configs import ConfigError
from consert.paper.plan import plan_runs
from consert.paper.workflow_config import check_schema, check_training_keys, load_workflow_config
from consert.train.config import load_train_config
from consert.train.recipes import stage_defaults
from tests.conftest import ROOT

CONFIG = ROOT / "config"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
WORKFLOW_CONFIGS = sorted(CONFIG.glob("*.yaml"))
TRAIN_CONFIGS = sorted((CONFIG / "train").glob("*.yaml"))


def test_every_yaml_file_under_config_is_checked_here():
    every = set(CONFIG.rglob("*.yaml")) | set(CONFIG.rglob("*.yml"))
    assert every == set(WORKFLOW_CONFIGS) | set(TRAIN_CONFIGS) and len(WORKFLOW_CONFIGS) >= 4


@pytest.mark.parametrize("path", WORKFLOW_CONFIGS, ids=lambda p: p.name)
def test_each_workflow_config_passes_the_schema_and_plans_its_runs(path):
    config = yaml.safe_load(path.read_text())
    if path.name == "rehearsal.yaml":  # layered over the paper's config, as its command does
        config = {**yaml.safe_load((CONFIG / "config.yaml").read_text()), **config}
    check_schema(config, SCHEMA)
    validate(config, str(SCHEMA))
    assert plan_runs(config), path.name
    check_training_keys(config)  # every run's resolved training keys pass the trainer's own check


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"foo": 1}, r"^config: unknown key `foo`; known keys: baselines, comparison, data_dir, "),
        ({"seedz": [1]}, r"^config: unknown key `seedz` \(did you mean `seeds`\?\)"),
        ({"stages": {"unsupp": {}}}, r"^config\.stages: unknown key `unsupp` \(did you mean `unsup`\?\)"),
        ({"dtype": "fp8"}, r"^config key `dtype`: 'fp8' is not one of"),
        ({"seeds": "1"}, r"^config key `seeds`: '1' is not of type 'array'"),
    ],
)
def test_a_schema_fault_is_one_line_naming_its_key(change, message):
    config = {**yaml.safe_load((CONFIG / "offline.yaml").read_text()), **change}
    with pytest.raises(ConfigError, match=message) as caught:
        check_schema(config, SCHEMA)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"train": {"lr": "abc"}}, r"^config, run [\w-]+: train keys: lr: expected a number, got 'abc'"),
        ({"train": {"lrr": 1e-5}}, r"unknown key `lrr` \(did you mean `lr`\?\)"),
        ({"stages": {"sup": {"batch_size": 0}}}, r"^config, run [\w-]+sup[\w-]*: .*batch_size: expected a positive"),
        ({"train": {"views": ["shuffle", "rotate"]}}, r"views: "),
    ],
)
def test_a_bad_training_key_in_the_workflow_config_is_refused_at_startup(block, message):
    config = {**yaml.safe_load((CONFIG / "offline.yaml").read_text()), **block}
    check_schema(config, SCHEMA)
    validate(config, str(SCHEMA))
    with pytest.raises(ConfigError, match=message):
        check_training_keys(config)


@pytest.mark.parametrize("path", TRAIN_CONFIGS, ids=lambda p: p.name)
def test_each_training_config_builds_and_sets_only_what_differs_from_the_recipe(path):
    values = yaml.safe_load(path.read_text())
    config = load_train_config(path)
    defaults = stage_defaults(config.mode)
    plain = {key: list(value) if isinstance(value, tuple) else value for key, value in defaults.items()}
    repeated = {key for key, value in values.items() if key in plain and value == plain[key]}
    assert repeated == set(), f"{path.name} repeats the recipe's {sorted(repeated)}"


@pytest.mark.parametrize(
    ("family", "message"),
    [
        (
            {"methods": ["simcsee"]},
            r"^config family\.methods: unknown method `simcsee` \(did you mean `simcse`\?\); known methods: augcse, "
            r"simcse$",
        ),
        (
            {"methods": ["simcse"], "simcze": {"lr": 1e-5}},
            r"^config family: unknown key `simcze` \(did you mean `simcse`",
        ),
    ],
)
def test_a_family_method_without_a_record_is_refused_at_startup(family, message):
    config = {**yaml.safe_load((CONFIG / "offline.yaml").read_text()), "family": family}
    with pytest.raises(ConfigError, match=message):
        load_workflow_config(config)


def test_the_method_records_are_the_one_list_of_methods(monkeypatch):
    """The schema names no method (``family.methods`` takes any name, and any other key of ``family`` is a method's
    block): a method added as a record alone passes the workflow's check, with a block of its own."""
    from consert.train.methods import METHODS

    family = yaml.safe_load(SCHEMA.read_text())["properties"]["family"]
    assert "enum" not in family["properties"]["methods"]["items"] and not set(family["properties"]) & set(METHODS)
    monkeypatch.setitem(METHODS, "toycse", dataclasses.replace(METHODS["simcse"], name="toycse"))
    config = yaml.safe_load((CONFIG / "offline.yaml").read_text())
    config["family"] = {"methods": ["toycse"], "toycse": {"temperature": 0.1}}
    assert load_workflow_config(config)["family"]["toycse"] == {"temperature": 0.1}


def test_the_config_readme_table_is_the_schemas_keys():
    """config/README.md's table of keys is the schema's: every top-level key with its title, in the schema's order
    (written by scripts/config_keys.py), so the keys are described in one place."""
    from consert.paper.workflow_config import keys_table

    schema = yaml.safe_load(SCHEMA.read_text())["properties"]
    table = keys_table(SCHEMA)
    assert [line.split("`")[1] for line in table.splitlines()[2:]] == list(schema)
    assert table in (CONFIG / "README.md").read_text()
