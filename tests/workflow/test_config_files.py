"""Every file under config/ loads: the workflow configs pass the keys' check (and plan their runs), the training
configs build a TrainConfig; no file repeats a value it could drift from; the schema and the README's table of
keys are what the keys' declarations generate."""

from __future__ import annotations

import dataclasses
import re

import pydantic
import pytest
import yaml
from snakemake.utils import validate

from consert.configs import ConfigError
from consert.planner.keys import WorkflowConfig, keys_table, schema_text
from consert.planner.load import check_schema, config_schema, load_workflow_config, read_workflow_config
from consert.planner.plan import plan_runs
from consert.train.config import load_train_config
from consert.train.modes import stage_defaults
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
    typed = load_workflow_config(config)  # every run's resolved training keys pass the trainer's own check too
    assert plan_runs(typed), path.name


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
        check_schema(config)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "seeds: [1, 2\ndtype: bf16\n",
            r"^{path}:2: not valid YAML: while parsing a flow sequence \(from line 1\), "
            r"expected ',' or '\]', but got ':'$",
        ),
        ("seeds: [1]\nseedz: [2]\n", r"^{path}: config: unknown key `seedz` \(did you mean `seeds`\?\)"),
    ],
)
def test_a_workflow_config_file_fault_names_the_file_once(tmp_path, text, message):
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.format(path=re.escape(str(path)))) as caught:
        read_workflow_config(path)
    assert str(caught.value).count(str(path)) == 1 and "\n" not in str(caught.value)


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
    check_schema(config)
    with pytest.raises(ConfigError, match=message):
        load_workflow_config(config)


@pytest.mark.parametrize(
    ("block", "value", "message"),
    [
        ("flow", {"levls": 2}, r"^config baselines\.flow: unknown key `levls` \(did you mean `levels`\?\)"),
        ("flow", {"levels": 0}, r"^config baselines\.flow: levels: expected a positive integer, got 0$"),
        ("flow", {"lr": "abc"}, r"^config baselines\.flow: lr: expected a number, got 'abc'"),
        ("sgopt", {"lrr": 1e-5}, r"^config baselines\.sgopt, run sgopt-base-seed1: unknown key `lrr` \(did you mean"),
    ],
)
def test_a_bad_baseline_key_is_refused_at_startup_by_its_settings_class(block, value, message):
    """BERT-flow's and SG-OPT's keys are their settings classes' (the config's keys do not list them again): the
    workflow's check asks those classes, and names the block."""
    config = yaml.safe_load((CONFIG / "offline.yaml").read_text())
    config["baselines"][block] = value
    with pytest.raises(ConfigError, match=message) as caught:
        load_workflow_config(config)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sweeps", {"sizes": ["bsae"]}, r"^config sweeps\.sizes: unknown size `bsae` \(did you mean `base`\?\)"),
        ("family", {"methods": ["simcse"], "sizes": ["large"]}, r"^config family\.sizes: unknown size `large`"),
        (
            "size_stages",
            {"large": {"unsup": {"lr": 1e-5}}},
            r"^config size_stages: unknown size `large`; known sizes: base$",
        ),
    ],
)
def test_a_size_that_names_no_model_is_refused_at_startup(key, value, message):
    """Sizes are the keys of ``models``: a size elsewhere that names none would plan nothing (size_stages) or fail
    inside the planner (the sweeps, the family)."""
    config = yaml.safe_load((CONFIG / "offline.yaml").read_text())
    config[key] = {**config.get(key, {}), **value}
    with pytest.raises(ConfigError, match=message):
        load_workflow_config(config)


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
    from consert.train.modes import MODES

    family = yaml.safe_load(SCHEMA.read_text())["properties"]["family"]
    assert "enum" not in family["properties"]["methods"]["items"] and not set(family["properties"]) & set(MODES)
    monkeypatch.setitem(MODES, "toycse", dataclasses.replace(MODES["simcse"], name="toycse"))
    config = yaml.safe_load((CONFIG / "offline.yaml").read_text())
    config["family"] = {"methods": ["toycse"], "toycse": {"temperature": 0.1}}
    assert load_workflow_config(config).family.method_blocks() == {"toycse": {"temperature": 0.1}}


def test_the_schema_and_the_readme_table_are_generated_from_the_keys():
    """The keys are described once (consert/planner/keys.py): the schema file and config/README.md's table are
    what scripts/config_keys.py writes from them, every top-level key in the declarations' order."""
    assert yaml.safe_load(SCHEMA.read_text()) == yaml.safe_load(schema_text(config_schema())), (
        "run python scripts/config_keys.py"
    )
    table = keys_table()
    assert [line.split("`")[1] for line in table.splitlines()[2:]] == list(
        yaml.safe_load(SCHEMA.read_text())["properties"]
    )
    assert table in (CONFIG / "README.md").read_text(), "run python scripts/config_keys.py"


def test_the_docs_table_lists_every_key_of_the_schema_with_its_default():
    """The Workflow page's table of keys (docs/hooks/config_keys.py) names every key the schema file has, a block's as
    block.key, each with the schema's default."""
    from consert.planner.keys import key_rows

    def keys(node, prefix=""):
        for key, spec in node.get("properties", {}).items():
            yield f"{prefix}{key}", spec.get("default", "required" if key in node.get("required", []) else None)
            yield from keys(spec, f"{prefix}{key}.")

    schema = dict(keys(yaml.safe_load(SCHEMA.read_text())))
    rows = {key: default for key, default, _ in key_rows()}
    assert rows.keys() == schema.keys() and "baselines.flow_nli.base" in rows
    assert {key: rows[key] for key in schema if rows[key] != "block"} == {
        key: default for key, default in schema.items() if rows[key] != "block"
    }
    assert all(text for _, _, text in key_rows())  # every key says what it sets


def test_the_typed_config_fills_the_defaults_snakemake_fills_from_the_schema():
    """Snakemake's own validation, a second implementation, fills the schema file's defaults into the test config;
    every value it gives equals the typed object's (the schema and the declarations cannot disagree on a default)."""
    raw = yaml.safe_load((CONFIG / "test.yaml").read_text())
    filled = yaml.safe_load((CONFIG / "test.yaml").read_text())
    validate(filled, str(SCHEMA), set_default=True)
    typed = WorkflowConfig.model_validate(raw).model_dump()

    def pairs(node, path=()):
        if isinstance(node, dict):
            for key, value in node.items():
                yield from pairs(value, (*path, key))
        else:
            yield path, node

    given = dict(pairs(filled))
    filled_in = set(given) - set(dict(pairs(raw)))  # what the test config leaves to the defaults
    assert {("gpu_mps",), ("baselines", "whitening_poolings"), ("sweeps", "heatmap"), ("gate", "alpha")} <= filled_in
    for path, value in given.items():
        ours = typed
        for key in path:
            ours = ours[key]
        assert ours == value, path


def test_the_typed_config_of_the_test_config():
    """The test config, read: its values, the defaults it leaves to the declarations (worked out by hand from
    config/test.yaml), and the values derived from both."""
    config = load_workflow_config(yaml.safe_load((CONFIG / "test.yaml").read_text()))
    assert config.seeds == [1, 2] and config.sweep_seeds == [1] and config.sgopt_seeds == [1, 2]
    assert config.threads == 1 and config.gpu_mps is True and config.nli.files == []
    assert config.baselines.whitening_poolings == ["mean:1,-1", "mean:-2,-1"] and config.baselines.glove is None
    assert config.baselines.flow == {"levels": 2, "depth": 1, "batch_size": 64}
    assert config.family.method_blocks().keys() == {"augcse"}
    assert config.family.method_keys("augcse")["batch_size"] == 8 and "augcse" in config.family.method_keys("augcse")
    assert config.family.method_keys("simcse") == {
        "batch_size": 8,
        "max_steps": 2,
        "eval_every": 2,
        "dev_max_pairs": 20,
    }
    assert config.stage_keys("sup", "base") == {"lr": 2.0e-5, "batch_size": 8, "max_steps": 2, "eval_every": 2,
                                                "dev_max_pairs": 20}  # fmt: skip
    assert config.gate.allow_stand_in is True and config.gate.alpha == 0.05 and config.sweeps.heatmap == "ordered"
    with pytest.raises(ValueError):  # read-only: a job cannot change what the workflow planned
        config.seeds = [3]


def test_config_values_on_the_command_line_are_read_as_in_a_config_file():
    """snakemake's `--config` parses a nested value with YAML's base loader, every scalar a string; the workflow reads
    those as a config file's YAML would (`seeds=[1,2]` two integers, `spacy_model: null` no pipeline), and leaves
    what came from the files alone (a string that looks like a number stays a string there)."""
    from consert.planner.load import typed_overrides

    config = {"seeds": ["1", "2"], "train": {"lr": "1e-5", "views": ["none", "shuffle"]}, "setting": "7",
              "family": {"augcse": {"augcse": {"spacy_model": "null", "wordnet": "data/wordnet"}}}}  # fmt: skip
    overrides = {"seeds": ["1", "2"], "train": {"lr": "1e-5"}, "family": config["family"]}
    typed = typed_overrides(config, overrides)
    assert typed["seeds"] == [1, 2] and typed["train"] == {"lr": "1e-5", "views": ["none", "shuffle"]}
    assert typed["family"]["augcse"]["augcse"] == {"spacy_model": None, "wordnet": "data/wordnet"}
    assert typed["setting"] == "7"  # from a file, not the command line


def test_the_environment_files_and_the_readme_install_the_same_torch_and_python():
    """environment.yml (a GPU box), environment-cpu.yml (PyTorch's CPU build) and the workflow's conda environment
    pin the release the README's pip command installs, on the same Python; only the CPU file names the CPU build."""
    pins = {}
    for name in ("environment.yml", "environment-cpu.yml", "workflow/envs/consert.yaml"):
        dependencies = yaml.safe_load((ROOT / name).read_text())["dependencies"]
        pip = next(item["pip"] for item in dependencies if isinstance(item, dict))
        pins[name] = ([d for d in dependencies if str(d).startswith("python=")], [p for p in pip if "torch==" in p])
    readme = re.search(r"pip install (torch==[\d.]+) -e \.", (ROOT / "README.md").read_text()).group(1)
    assert pins["environment.yml"] == pins["workflow/envs/consert.yaml"] == (["python=3.11"], [readme])
    assert pins["environment-cpu.yml"] == (["python=3.11"], [f"{readme}+cpu"])


@pytest.mark.parametrize(
    ("block", "key"),
    [({"seeds": [1, 2, 1]}, "seeds"), ({"sweeps": {"seeds": [3, 3]}}, "sweeps.seeds"),
     ({"baselines": {"sgopt_seeds": [1, 2, 3, 4, 1234, 2345, 2345]}}, "baselines.sgopt_seeds")],
)  # fmt: skip
def test_a_seed_given_twice_in_any_seeds_key_is_refused_at_startup(block, key):
    """At 03ef47f `seeds: [1, 1]` planned the run once and averaged it twice (n_seeds 2, SD 0)."""
    from consert.planner.load import typed_overrides

    config = yaml.safe_load((CONFIG / "offline.yaml").read_text())
    for name, value in block.items():
        config[name] = {**config.get(name, {}), **value} if isinstance(value, dict) else value
    with pytest.raises(ConfigError, match=rf"^config key `{re.escape(key)}`: seed \d+ is given twice \(\[") as caught:
        load_workflow_config(config)
    assert "\n" not in str(caught.value)
    # as snakemake's --config gives it: every scalar a string, read as YAML
    texts = {name: [str(seed) for seed in value] for name, value in block.items() if isinstance(value, list)}
    if texts:
        with pytest.raises(ConfigError, match="is given twice"):
            load_workflow_config(typed_overrides({**config, **texts}, texts))
    with pytest.raises(pydantic.ValidationError):  # the typed config itself: no path around the schema
        WorkflowConfig.model_validate({**yaml.safe_load((CONFIG / "offline.yaml").read_text()), "seeds": [1, 1]})


def test_on_off_switches_from_the_workflows_blocks_and_its_command_line_resolve_to_on_and_off():
    """YAML 1.1 reads `packed: on` as true; at 03ef47f every run refused it ("expected one of 'on' or 'off', got
    True"). From the `train` and `stages` blocks and from --config alike, each run's resolved file says on/off."""
    from consert.planner.load import typed_overrides
    from consert.planner.run_configs import consert_train_config

    config = yaml.safe_load((CONFIG / "offline.yaml").read_text())
    config["train"] = {**config.get("train", {}), "packed": True, "compile": False}  # `packed: on`, `compile: off`
    config["stages"] = {**config.get("stages", {}), "unsup": {**config.get("stages", {}).get("unsup", {}),
                                                              "cuda_graphs": False}}  # fmt: skip
    typed = load_workflow_config(config)
    runs = {
        run_id: consert_train_config(run_id, spec, typed).to_dict() for run_id, spec in plan_runs_by_id(typed).items()
    }
    unsup = next(values for values in runs.values() if values["mode"] == "unsup")
    assert (unsup["packed"], unsup["compile"], unsup["cuda_graphs"]) == ("on", "off", "off")
    assert {values["packed"] for values in runs.values() if values["mode"] in ("unsup", "sup", "joint")} == {"on"}
    override = {"train": {"packed": "on", "cuda_graphs": "true"}}  # snakemake --config "train={packed: on, ...}"
    typed = load_workflow_config(typed_overrides({**config, **override}, override))
    runs = {
        spec.mode: consert_train_config(run_id, spec, typed).to_dict()
        for run_id, spec in plan_runs_by_id(typed).items()
    }
    assert (runs["unsup"]["packed"], runs["unsup"]["cuda_graphs"]) == ("on", "off")  # its stage's block over train's
    assert (runs["sup"]["packed"], runs["sup"]["cuda_graphs"]) == ("on", "on")


def plan_runs_by_id(config: WorkflowConfig) -> dict:
    from consert.planner.plan import unique_runs

    return unique_runs(plan_runs(config))
